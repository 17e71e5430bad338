"""The project overview: every result list's mean NDCG with its interval, progress, charts."""

import datetime as dt
from dataclasses import dataclass

import numpy as np
from django.db import connection
from django.db.models import Count, Sum, Value
from django.db.models.functions import Least

from judgements.models import Project, QueuePair, ResultList
from metrics.core.stats import ConfidenceInterval, bootstrap_mean_cis
from metrics.dashboards.evaluations import Evaluation, epoch_ms, freshest, list_evaluations
from metrics.dashboards.labels import parameter_line
from metrics.models import MetricPoint
from metrics.registry import MetricSpec, project_spec

# Resamples for the overview's intervals: 1,000 is the usual minimum for a 95%
# percentile interval (Efron & Tibshirani, ch. 19) and keeps a page over 10,000
# queries fast; the comparison page, which decides between lists, uses 10,000.
OVERVIEW_RESAMPLES = 1_000
SEED = 0

POOL_SQL = """
WITH pool AS (
    SELECT DISTINCT hit.query_id, hit.document_id
    FROM judgements_hit hit
    JOIN judgements_resultlist run ON run.id = hit.result_list_id
    WHERE run.project_id = %(project)s AND hit.rank <= %(depth)s
),
latest AS (
    SELECT DISTINCT ON (j.query_id, j.document_id, j.rater_id) j.query_id, j.document_id, j.kind
    FROM judgements_judgement j
    JOIN pool USING (query_id, document_id)
    WHERE j.created_at <= %(as_of)s
    ORDER BY j.query_id, j.document_id, j.rater_id, j.created_at DESC, j.id DESC
),
graded AS (
    SELECT query_id, document_id, count(*) AS grades
    FROM latest WHERE kind = 'grade'
    GROUP BY query_id, document_id
)
-- LEAST ignores NULL, so a pair without grades must count 0 explicitly.
SELECT count(*), coalesce(sum(least(coalesce(graded.grades, 0), %(wanted)s)), 0)
FROM pool LEFT JOIN graded USING (query_id, document_id)
"""


@dataclass(frozen=True)
class ListSummary:
    evaluation: Evaluation
    interval: ConfidenceInterval

    @property
    def result_list(self) -> ResultList:
        return self.evaluation.result_list


@dataclass(frozen=True)
class PoolProgress:
    """Grades collected and still needed for the pool (top ``depth`` pairs of any list)."""

    pairs: int
    collected: int
    judges_per_pair: int
    depth: int

    @property
    def wanted(self) -> int:
        return self.pairs * self.judges_per_pair

    @property
    def needed(self) -> int:
        return self.wanted - self.collected


@dataclass(frozen=True)
class SeriesPoint:
    result_list: str
    as_of: dt.datetime
    value: float


@dataclass(frozen=True)
class Overview:
    spec: MetricSpec
    summaries: list[ListSummary]
    pool: PoolProgress
    series_spec: MetricSpec
    series: list[SeriesPoint]

    @property
    def series_params(self) -> list[str]:
        return parameter_line(self.series_spec)

    @property
    def chart(self) -> dict:
        """The charts' data, for ``json_script``: x values in epoch milliseconds."""
        lines: dict[str, list] = {}
        for point in self.series:
            lines.setdefault(point.result_list, []).append([epoch_ms(point.as_of), point.value])
        return {
            "series": [{"label": label, "points": points} for label, points in lines.items()],
            "by_capture": [_capture_point(summary) for summary in self.summaries],
        }

    @property
    def as_of(self) -> dt.datetime | None:
        return freshest([summary.evaluation for summary in self.summaries])[0]

    @property
    def stored(self) -> bool:
        return freshest([summary.evaluation for summary in self.summaries])[1]


def project_overview(project: Project, spec: MetricSpec, *, as_of: dt.datetime | None) -> Overview:
    """Every result list's mean with its interval, the pool's progress and the charts' data."""
    result_lists = list(project.result_lists.order_by("captured_at", "name"))
    evaluations = list_evaluations(project, spec, as_of=as_of, result_lists=result_lists)
    summaries = [
        ListSummary(evaluation, interval)
        for evaluation, interval in zip(evaluations, _intervals(evaluations), strict=True)
    ]
    series_spec = project_spec(project)
    series = mean_series(project, series_spec, as_of=as_of)
    return Overview(spec, summaries, pool_progress(project, as_of=as_of), series_spec, series)


def _intervals(evaluations: list[Evaluation]) -> list[ConfidenceInterval]:
    """Each list's interval; lists over the same queries share their resampled query sets."""
    groups: dict[bytes, list[int]] = {}
    for i, evaluation in enumerate(evaluations):
        groups.setdefault(evaluation.query_ids.tobytes(), []).append(i)
    intervals: list = [None] * len(evaluations)
    for members in groups.values():
        values = np.stack([evaluations[i].ndcg for i in members])
        found = bootstrap_mean_cis(values, n_resamples=OVERVIEW_RESAMPLES, seed=SEED)
        for i, interval in zip(members, found, strict=True):
            intervals[i] = interval
    return intervals


def _capture_point(summary: ListSummary) -> dict:
    interval = summary.interval
    return {
        "label": summary.result_list.name,
        "x": epoch_ms(summary.result_list.captured_at),
        "mean": None if np.isnan(interval.estimate) else interval.estimate,
        "low": None if np.isnan(interval.low) else interval.low,
        "high": None if np.isnan(interval.high) else interval.high,
    }


def mean_series(
    project: Project, spec: MetricSpec, *, as_of: dt.datetime | None
) -> list[SeriesPoint]:
    """The stored mean over queries of every result list, list by list, oldest point first."""
    points = MetricPoint.objects.filter(
        result_list__project=project, query__isnull=True, metric=spec.name
    )
    if as_of is not None:
        points = points.filter(as_of__lte=as_of)
    rows = points.order_by("result_list__captured_at", "result_list_id", "as_of").values_list(
        "result_list__name", "as_of", "value"
    )
    return [SeriesPoint(*row) for row in rows]


def pool_progress(project: Project, *, as_of: dt.datetime | None) -> PoolProgress:
    """Pairs in the pool, and current grades counted up to ``judges_per_pair`` per pair.

    Now, the queue's pool table (kept current by triggers on every write) has the
    counts; a past moment needs the judgement log itself.
    """
    wanted = project.judges_per_pair
    if as_of is None:
        totals = QueuePair.objects.filter(project=project).aggregate(
            pairs=Count("pk"), collected=Sum(Least("grades", Value(wanted)))
        )
        pairs, collected = totals["pairs"], totals["collected"] or 0
    else:
        params = {"project": project.pk, "depth": project.pool_depth, "as_of": as_of}
        with connection.cursor() as cursor:
            cursor.execute(POOL_SQL, {**params, "wanted": wanted})
            pairs, collected = cursor.fetchone()
    return PoolProgress(int(pairs), int(collected), wanted, project.pool_depth)
