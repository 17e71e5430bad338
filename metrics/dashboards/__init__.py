"""Page-level selectors of the dashboards: plain data for templates, numbers from metrics.core.

One module per page (overview, queries, compare, agreement on the raters page) on top
of :mod:`metrics.dashboards.evaluations`; :mod:`metrics.sources` decides, once per
request, which source each number is read from.
"""

from metrics.dashboards.agreement import raters_report
from metrics.dashboards.compare import comparison
from metrics.dashboards.overview import project_overview
from metrics.dashboards.queries import query_detail, query_table

__all__ = ["comparison", "project_overview", "query_detail", "query_table", "raters_report"]
