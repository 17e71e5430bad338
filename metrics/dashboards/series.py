"""The series of a result list (its mean over queries) and of one of its queries: stored
for the human raters' grades, replayed from the log for other grades."""

import datetime as dt
import math

from django.utils import timezone

from judgements.models import Query, ResultList
from metrics.history import replayed_series
from metrics.models import MetricPoint
from metrics.registry import MetricSpec
from metrics.sources import HUMAN, Grades

# What a point of each kind holds; the interval is kept with the mean only.
LIST_COLUMNS = (
    "as_of", "value", "queries", "zero_idcg", "judged", "retrieved", "judgements",
    "ci_low", "ci_high", "ci_confidence", "ci_resamples", "ci_seed", "ci_pending",
    "computed_at",
)  # fmt: skip
QUERY_COLUMNS = (
    "as_of", "value", "dcg", "idcg", "judged", "retrieved", "judgements", "computed_at",
)  # fmt: skip


def stored_series(
    result_list: ResultList,
    spec: MetricSpec,
    *,
    query: Query | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    grades: Grades = HUMAN,
) -> list[dict]:
    """The stored points of ``spec`` for the list's mean (or for ``query``), oldest
    first, between ``since`` and ``until`` (both included), each with its coverage:
    judged hits within the cut-off over the hits there (None when there are none). A
    mean over no query (before the first grade, under the judged mean) and its interval
    are None (JSON has no NaN). The stored series holds the human raters' grades; for
    other ``grades`` the points are replayed from the log (``replayed_series``)."""
    columns = QUERY_COLUMNS if query is not None else LIST_COLUMNS
    if grades.human_only:
        points = MetricPoint.objects.filter(result_list=result_list, metric=spec.name, query=query)
        if since is not None:
            points = points.filter(as_of__gte=since)
        if until is not None:
            points = points.filter(as_of__lte=until)
        rows = list(points.order_by("as_of").values(*columns))
    else:
        replayed = replayed_series(
            result_list.project,
            spec,
            grades=grades,
            until=until or timezone.now(),
            since=since,
            result_lists=[result_list],
            query=query,
        )
        rows = [{name: getattr(point, name) for name in columns} for point in replayed]
    for row in rows:
        row.update(
            (name, None) for name, v in row.items() if isinstance(v, float) and math.isnan(v)
        )
        row["coverage"] = row["judged"] / row["retrieved"] if row["retrieved"] else None
    return rows
