"""The series of a result list (its mean over queries) and of one of its queries: stored
for the human raters' grades, replayed from the log for other grades; and the overview's
series of every list's mean (``mean_series``)."""

import datetime as dt
import math
from dataclasses import dataclass

import numpy as np
from django.utils import timezone

from judgements.models import Project, Query, ResultList
from metrics.dashboards.evaluations import epoch_ms
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


def finite(value: float | None) -> float | None:
    """``value``, or None for NaN (JSON has no NaN) and for a missing value."""
    return None if value is None or np.isnan(value) else value


@dataclass(frozen=True)
class SeriesPoint:
    """One stored overall point: the mean, its interval and the coverage behind it."""

    result_list: str
    as_of: dt.datetime
    value: float
    ci_low: float | None
    ci_high: float | None
    queries: int
    queries_judged: int | None
    queries_returned: int | None
    judged: int
    retrieved: int
    # As overview.ListSummary.interval_pending.
    ci_pending: bool = False

    @property
    def mean(self) -> float | None:
        """The mean, or None when no query counts (no judged query yet)."""
        return self.value if self.queries else None

    @property
    def judged_share(self) -> float | None:
        """Share of the list's queries with a current grade (None if not kept)."""
        if not self.queries_returned or self.queries_judged is None:
            return None
        return self.queries_judged / self.queries_returned

    @property
    def coverage(self) -> float | None:
        """Judged@k: share of the top-k hits of all the list's queries with a grade."""
        return self.judged / self.retrieved if self.retrieved else None

    def chart_row(self) -> list:
        """[x, mean, CI low, CI high, queries in the mean, share judged, judged@k]."""
        return [
            epoch_ms(self.as_of),
            self.mean,
            *(finite(v) if self.queries >= 2 else None for v in (self.ci_low, self.ci_high)),
            self.queries,
            self.judged_share,
            self.coverage,
        ]


def mean_series(
    project: Project, spec: MetricSpec, *, as_of: dt.datetime | None
) -> list[SeriesPoint]:
    """The stored mean over queries of every result list, with its interval and coverage,
    list by list, oldest point first."""
    points = MetricPoint.objects.filter(
        result_list__project=project, query__isnull=True, metric=spec.name
    )
    if as_of is not None:
        points = points.filter(as_of__lte=as_of)
    rows = points.order_by("result_list__captured_at", "result_list_id", "as_of").values_list(
        "result_list__name", *SERIES_FIELDS
    )
    return [SeriesPoint(*row) for row in rows]


def replayed_mean_series(project: Project, spec: MetricSpec, *, fresh) -> list[SeriesPoint]:
    """``mean_series`` of other grades than the human raters' (``fresh.grades``), which no
    stored series holds: computed from the log at each day's end, as a rebuild would."""
    points = replayed_series(project, spec, grades=fresh.grades, until=fresh.moment)
    return [
        SeriesPoint(point.result_list.name, *(getattr(point, name) for name in SERIES_FIELDS))
        for point in points
    ]


SERIES_FIELDS = [
    "as_of",
    "value",
    "ci_low",
    "ci_high",
    "queries",
    "queries_judged",
    "queries_returned",
    "judged",
    "retrieved",
    "ci_pending",
]
