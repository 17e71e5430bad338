"""The project overview: every result list's mean NDCG with its interval, progress, charts.

Two charts answer two questions. Over time, each result list's stored series: the
same ranking measured as grades arrive, drawn beside its coverage (the share of its
queries judged and judged@k), so a rise that is grades arriving reads as such. By
capture date, every list on the same judgements (as of now, or the moment asked
for): a difference there is the ranking's.
"""

import datetime as dt
import hashlib
from dataclasses import dataclass, replace

import numpy as np
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Sum, Value
from django.db.models.functions import Least

from judgements.models import Project, QueuePair, ResultList
from metrics import selectors
from metrics.core.segments import sorted_lookup
from metrics.core.stats import ConfidenceInterval, bootstrap_mean_cis
from metrics.dashboards.evaluations import Evaluation, epoch_ms, list_evaluations
from metrics.dashboards.labels import measure_label, measures_line, parameter_line
from metrics.dashboards.measures import RELEVANT_FROM, list_measures
from metrics.dashboards.series import SeriesPoint, finite, mean_series, replayed_mean_series
from metrics.dashboards.unjudged import pool_keys, unjudged_work
from metrics.evaluate import INTERVAL_CONFIDENCE, INTERVAL_RESAMPLES, INTERVAL_SEED
from metrics.registry import MetricSpec, project_spec
from metrics.revisions import revisions_per_week
from metrics.sources import HUMAN, Freshness, Grades, Source, freshness, one_snapshot

# Each list's newest overall point: one index descent per list.
OVERALL_SQL = """
SELECT run.id, point.value, point.judged, point.retrieved, point.queries, point.zero_idcg,
       point.ci_low, point.ci_high, point.ci_confidence, point.ci_resamples, point.ci_seed,
       point.queries_judged, point.queries_returned, point.as_of, point.ci_pending
FROM unnest(%(lists)s::bigint[]) AS run (id)
CROSS JOIN LATERAL (
    SELECT * FROM metrics_metricpoint
    WHERE result_list_id = run.id AND metric = %(metric)s AND query_id IS NULL
    ORDER BY as_of DESC
    LIMIT 1
) point
"""

# How long a list's interval is kept for the values it was drawn from (a day, as the
# comparison's).
INTERVAL_CACHE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class ListSummary:
    """One result list's line of the overview, from its stored overall point or computed.

    ``queries`` are those behind the mean; ``queries_judged`` of the ``queries_returned``
    the list returned have a current grade; ``coverage`` is judged@k over all of them,
    ``unjudged`` the top-k hits without a grade and ``queued`` how many of those are in
    the raters' queue (the project's pool; ``with_queued`` fills it in).
    """

    result_list: ResultList
    mean: float | None
    interval: ConfidenceInterval
    coverage: float | None
    queries: int
    queries_judged: int
    queries_returned: int
    zero_idcg: int
    as_of: dt.datetime
    source: Source
    # The interval is of an earlier state of the list's queries than the mean (a grade's
    # refresh updated the mean alone; metrics.overall): a task is drawing it again.
    interval_pending: bool = False
    # The means of the measures shown beside NDCG: (name, label, mean or None), in order.
    measures: tuple = ()
    unjudged: int = 0
    queued: int | None = None

    @classmethod
    def from_evaluation(cls, evaluation: Evaluation, interval: ConfidenceInterval):
        return cls(
            result_list=evaluation.result_list,
            mean=evaluation.mean,
            interval=interval,
            coverage=evaluation.coverage,
            queries=evaluation.queries,
            queries_judged=evaluation.queries_judged,
            queries_returned=len(evaluation.query_ids),
            zero_idcg=evaluation.zero_idcg,
            as_of=evaluation.as_of,
            source=evaluation.source,
            unjudged=evaluation.unjudged,
        )

    @property
    def judged_share(self) -> float | None:
        return self.queries_judged / self.queries_returned if self.queries_returned else None


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
class WeekCount:
    """Revisions recorded in the UTC week starting on ``week`` (a Monday)."""

    week: dt.date
    revisions: int


@dataclass(frozen=True)
class Overview:
    spec: MetricSpec
    fresh: Freshness
    summaries: list[ListSummary]
    pool: PoolProgress
    series_spec: MetricSpec
    series: list[SeriesPoint]
    revisions: list[WeekCount]
    # The measures shown beside NDCG: (name, label) in order, and what they mean.
    measures: tuple = ()
    measures_line: str = ""

    @property
    def series_params(self) -> list[str]:
        return [*parameter_line(self.series_spec), self.fresh.grades.label]

    @property
    def series_replayed(self) -> bool:
        """Whether the series was replayed from the log (no stored series holds its grades)."""
        return not self.fresh.grades.human_only

    @property
    def chart(self) -> dict:
        """The charts' data, for ``json_script``: x values in epoch milliseconds. Each
        series point is ``SeriesPoint.chart_row()``; its first two items are (x, mean),
        which the search-log chart reads too."""
        lines: dict[str, list] = {}
        for point in self.series:
            lines.setdefault(point.result_list, []).append(point.chart_row())
        return {
            "series": [{"label": label, "points": points} for label, points in lines.items()],
            "by_capture": [_capture_point(summary) for summary in self.summaries],
        }

    @property
    def revisions_total(self) -> int:
        return sum(week.revisions for week in self.revisions)

    @property
    def as_of(self) -> dt.datetime | None:
        """The moment the numbers hold as of; None with no result list (nothing to hold)."""
        return self.fresh.moment if self.summaries else None

    @property
    def source(self) -> Source:
        return self.fresh.lists


@one_snapshot
def project_overview(
    project: Project,
    spec: MetricSpec,
    *,
    as_of: dt.datetime | None,
    grades: Grades = HUMAN,
    measures: tuple[str, ...] = (),
) -> Overview:
    """Every result list's mean with its interval, the pool's progress and the charts' data,
    on the consensus of ``grades`` (the stored series holds the human raters'; other
    grades' series are replayed from the log, ``metrics.history.replayed_series``), and
    the means of ``measures`` (names of ``labels.MEASURES``) beside NDCG."""
    fresh = freshness(project, spec, as_of=as_of, grades=grades)
    result_lists = list(project.result_lists.order_by("captured_at", "name"))
    # A past moment's grades are replayed from the log once, for the lists and the pool.
    pairs = None
    if fresh.pairs == Source.LOG:
        pairs = selectors.pair_grades(project.pk, fresh=fresh, policy=spec.consensus)
    summaries = None
    if fresh.stored:
        summaries = stored_summaries(spec, result_lists, fresh)
    if summaries is None:
        summaries = computed_summaries(
            project, spec, fresh=fresh, result_lists=result_lists, pairs=pairs
        )
    series_spec = project_spec(project)
    if fresh.grades.human_only:
        series = mean_series(project, series_spec, as_of=as_of)
    else:
        series = replayed_mean_series(project, series_spec, fresh=fresh)
    if measures and summaries:
        summaries = _with_measures(project, spec, summaries, fresh, pairs, measures)
    summaries = with_queued(project, spec, summaries, as_of=as_of)
    pool = pool_progress(project, fresh=fresh, pairs=pairs)
    weeks = [WeekCount(*row) for row in revisions_per_week(project.pk, as_of=as_of)]
    shown = tuple((name, measure_label(spec, name)) for name in measures)
    line = measures_line(spec, measures, relevant_from=RELEVANT_FROM, max_grade=project.max_grade)
    return Overview(spec, fresh, summaries, pool, series_spec, series, weeks, shown, line)


def with_queued(project, spec, summaries, *, as_of) -> list[ListSummary]:
    """``summaries`` with how many of each list's unjudged top-k hits are in the queue.

    Every hit within the pool depth is in the pool, so with k up to it the unjudged
    hits are all queued; deeper ones are only where another list ranks them within the
    depth, which the unjudged work reads (``unjudged_work``, as its page does).
    """
    if spec.k is not None and spec.k <= project.pool_depth:
        return [replace(summary, queued=summary.unjudged) for summary in summaries]
    return [
        replace(summary, queued=summary.unjudged and unjudged_work(
            project, summary.result_list, k=spec.k, as_of=as_of).in_pool)
        for summary in summaries
    ]  # fmt: skip


def _with_measures(project, spec, summaries, fresh, pairs, names) -> list[ListSummary]:
    """``summaries`` with each list's means of the measures ``names``, over the queries
    its NDCG mean counts (``Evaluation.mean_of``, as the API's means)."""
    result_lists = [summary.result_list for summary in summaries]
    evaluations = list_evaluations(
        project, spec, fresh=fresh, result_lists=result_lists, pairs=pairs
    )
    found = list_measures(project, spec, evaluations, fresh=fresh, pairs=pairs, names=names)
    return [
        replace(
            summary,
            measures=tuple(
                (name, measure_label(spec, name), _finite_mean(evaluation, values[name]))
                for name in names
            ),
        )
        for summary, evaluation, values in zip(summaries, evaluations, found, strict=True)
    ]


def _finite_mean(evaluation: Evaluation, values: np.ndarray) -> float | None:
    mean = evaluation.mean_of(values)
    return None if mean is None or np.isnan(mean) else mean


def stored_summaries(spec, result_lists, fresh: Freshness) -> list[ListSummary] | None:
    """Every list's line from its newest overall point, where ``fresh`` says the stored
    series holds; None when a list's point lacks the interval the page shows.

    An overall point is written after its per-query points, over their latest
    values, so the newest one holds what the per-query points hold now. Points
    stored before their interval was (or with other interval parameters) do not
    count: then the page computes the intervals from the per-query values.
    """
    if not result_lists or not fresh.stored:
        return None
    params = {"lists": [result_list.pk for result_list in result_lists], "metric": spec.name}
    with connection.cursor() as cursor:
        cursor.execute(OVERALL_SQL, params)
        points = {row[0]: row[1:] for row in cursor.fetchall()}
    wanted = (INTERVAL_CONFIDENCE, INTERVAL_RESAMPLES, INTERVAL_SEED)
    # A mean over no query has no interval (its parameters are not kept).
    if len(points) < len(result_lists) or any(
        (p[7:10] != wanted and p[3] > 0) or p[10] is None for p in points.values()
    ):
        return None
    return [
        _stored_summary(result_list, points[result_list.pk], fresh.moment)
        for result_list in result_lists
    ]


def _stored_summary(result_list, point, moment) -> ListSummary:
    value, judged, retrieved, queries, zero_idcg, low, high, confidence, resamples = point[:9]
    queries_judged, queries_returned, _, pending = point[10:14]
    return ListSummary(
        result_list=result_list,
        mean=value if queries else None,
        interval=ConfidenceInterval(value, low, high, confidence, resamples),
        coverage=judged / retrieved if retrieved else None,
        queries=queries,
        queries_judged=queries_judged,
        queries_returned=queries_returned,
        zero_idcg=zero_idcg,
        as_of=moment,
        source=Source.STORED,
        interval_pending=pending,
        unjudged=retrieved - judged,
    )


def computed_summaries(project, spec, *, fresh, result_lists, pairs=None) -> list[ListSummary]:
    """Every list's line from its per-query values (from the source ``fresh`` names;
    from ``pairs`` when given)."""
    evaluations = list_evaluations(
        project, spec, fresh=fresh, result_lists=result_lists, pairs=pairs
    )
    return [
        ListSummary.from_evaluation(evaluation, interval)
        for evaluation, interval in zip(evaluations, _intervals(evaluations), strict=True)
    ]


def computed_summary(evaluation: Evaluation) -> ListSummary:
    """One list's line from its per-query values, as ``computed_summaries`` draws it."""
    return ListSummary.from_evaluation(evaluation, _intervals([evaluation])[0])


def _intervals(evaluations: list[Evaluation]) -> list[ConfidenceInterval]:
    """Each list's interval over the values its mean counts; lists whose means count as
    many queries share their resampled query sets.

    Same parameters as the interval stored with overall points, which is the same
    interval: shared draws give each list what ``bootstrap_mean_ci`` gives it alone,
    so each list's interval is cached by its own values (``_interval_key``).
    """
    counted = [evaluation.counted_values for evaluation in evaluations]
    keys = [_interval_key(values) for values in counted]
    known = cache.get_many(keys)
    groups: dict[int, list[int]] = {}
    for i, values in enumerate(counted):
        if keys[i] not in known:
            groups.setdefault(len(values), []).append(i)
    for members in groups.values():
        values = np.stack([counted[i] for i in members])
        found = bootstrap_mean_cis(
            values,
            confidence=INTERVAL_CONFIDENCE,
            n_resamples=INTERVAL_RESAMPLES,
            seed=INTERVAL_SEED,
        )
        drawn = {keys[i]: interval for i, interval in zip(members, found, strict=True)}
        cache.set_many(drawn, timeout=INTERVAL_CACHE_SECONDS)
        known.update(drawn)
    return [known[key] for key in keys]


def _interval_key(values: np.ndarray) -> str:
    """The cache key of the interval of ``values`` (float64, the counted values in query
    order): the interval is a function of them and of the fixed parameters alone, as the
    comparison's test is (metrics.dashboards.compare.significance), so a page shown
    again over the same values (the same k, the same past moment) reuses it, and any
    change of a value is another key."""
    digest = hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()).hexdigest()
    parameters = f"{INTERVAL_CONFIDENCE}:{INTERVAL_RESAMPLES}:{INTERVAL_SEED}"
    return f"metrics:overview:interval:{parameters}:{len(values)}:{digest}"


def _capture_point(summary: ListSummary) -> dict:
    interval = summary.interval
    counted = summary.mean is not None
    return {
        "label": summary.result_list.name,
        "x": epoch_ms(summary.result_list.captured_at),
        "mean": finite(interval.estimate) if counted else None,
        "low": finite(interval.low) if counted else None,
        "high": finite(interval.high) if counted else None,
        "queries": summary.queries,
        "coverage": summary.coverage,
    }


def pool_progress(
    project: Project, *, fresh: Freshness, pairs: selectors.PairGrades | None = None
) -> PoolProgress:
    """Pairs in the pool, and current grades counted up to ``judges_per_pair`` per pair.

    Where ``fresh`` says the trigger-kept tables hold, the queue's pool table has the
    counts. Otherwise (a past moment) the grades each of the same pairs had then are
    counted, from ``pairs`` (read here unless given): which pairs are pooled depends
    on the result lists and the pool depth, not on the moment.
    """
    wanted = project.judges_per_pair
    if fresh.derived:
        totals = QueuePair.objects.filter(project=project).aggregate(
            pairs=Count("pk"), collected=Sum(Least("grades", Value(wanted)))
        )
        return PoolProgress(totals["pairs"], totals["collected"] or 0, wanted, project.pool_depth)
    if pairs is None:
        pairs = selectors.pair_grades(project.pk, fresh=fresh, policy="mean")
    keys = pool_keys(project.pk)
    # A pair without a grade is not among ``pairs``: NaN, counted 0.
    grades = np.nan_to_num(sorted_lookup(pairs.keys, pairs.raters.astype(np.float64), keys))
    collected = int(np.minimum(grades, wanted).sum())
    return PoolProgress(len(keys), collected, wanted, project.pool_depth)
