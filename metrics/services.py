"""Recomputing stored metrics: selectors in, metrics.core in the middle, rows out."""

import datetime as dt

import numpy as np
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from judgements.models import Project, ResultList
from metrics import buckets, replay, revisions, selectors
from metrics.core import ndcg_batch, query_mean
from metrics.core.stats import ConfidenceInterval, bootstrap_mean_ci, bootstrap_mean_cis
from metrics.models import POINT_FIELDS, LatestMetricPoint, MetricPoint, StaleQuery
from metrics.registry import MetricSpec, stored_specs

# The interval stored with every overall point, and shown by the overview: 1,000
# resamples is the usual minimum for a 95% percentile interval (Efron & Tibshirani,
# ch. 19); the comparison page, which decides between lists, draws 10,000.
INTERVAL_CONFIDENCE = 0.95
INTERVAL_RESAMPLES = 1_000
INTERVAL_SEED = 0

LATEST_FIELDS = ["as_of", "value", "dcg", "idcg", "judged", "retrieved", "judgements", "zero_idcg"]

# Copies per-query points into LatestMetricPoint unless a newer point is there already.
# Django's bulk_create cannot put a condition on ON CONFLICT DO UPDATE, hence SQL.
LATEST_UPSERT_SQL = """
INSERT INTO metrics_latestmetricpoint AS latest (result_list_id, query_id, metric, {fields})
SELECT * FROM unnest(
    %s::bigint[], %s::bigint[], %s::varchar[], %s::timestamptz[], %s::float8[], %s::float8[],
    %s::float8[], %s::int[], %s::int[], %s::int[], %s::int[]
)
ON CONFLICT (result_list_id, metric, query_id) DO UPDATE
SET {updates}
WHERE latest.as_of <= EXCLUDED.as_of
""".format(
    fields=", ".join(LATEST_FIELDS),
    updates=", ".join(f"{field} = EXCLUDED.{field}" for field in LATEST_FIELDS),
)


def result_list_evaluate(
    result_list: ResultList, spec: MetricSpec, *, as_of, pairs=None, query_ids=None
):
    """Evaluate the queries of ``result_list`` (all, or ``query_ids``).

    Returns (ResultListGrades, BatchNdcgResult). Without ``pairs`` the grades are read
    packed when they hold as of ``as_of``, else from the judgement log; ``pairs`` may be
    passed in when several result lists are evaluated against the log's grades.
    """
    grades, _ = _list_grades(result_list, spec, as_of=as_of, pairs=pairs, query_ids=query_ids)
    return grades, _evaluated(grades, spec)


def result_lists_evaluate(result_lists, spec: MetricSpec, *, as_of, pairs=None) -> dict:
    """``result_list_evaluate`` of several lists of one project, by list id; the log is
    replayed at most once, for the lists whose packed grades do not hold as of ``as_of``
    (``pairs``, given, are used for every list)."""
    evaluated = {}
    for result_list in result_lists:
        grades, pairs = _list_grades(result_list, spec, as_of=as_of, pairs=pairs, query_ids=None)
        evaluated[result_list.pk] = grades, _evaluated(grades, spec)
    return evaluated


def _list_grades(result_list, spec, *, as_of, pairs, query_ids):
    """The list's grades, and the pair grades they were laid out from (None if packed).

    Packed when no ``pairs`` are given and the packed rows hold as of ``as_of`` (no
    event of the project is dated later); otherwise from ``pairs``, replayed from the
    log when not given.
    """
    if pairs is None:
        packed = selectors.stored_result_list_grades(
            result_list.pk,
            result_list.project_id,
            as_of=as_of,
            policy=spec.consensus,
            depth=_depth(spec),
            query_ids=query_ids,
        )
        if packed is not None:
            return packed, None
        pairs = selectors.logged_pair_grades(
            result_list.project_id, as_of=as_of, policy=spec.consensus, query_ids=query_ids
        )
    grades = selectors.result_list_grades(
        result_list.pk, pairs, depth=_depth(spec), query_ids=query_ids
    )
    return grades, pairs


def _depth(spec: MetricSpec) -> int | None:
    """Hits read per query: only the top k is needed unless unjudged hits are removed
    first or the ideal is built from every returned hit."""
    return spec.k if spec.unjudged == "zero" and spec.ideal == "judged" else None


def _evaluated(grades, spec: MetricSpec):
    ideal, ideal_offsets = (
        (grades.ranked_grades, grades.offsets)
        if spec.ideal == "returned"
        else (grades.judged_grades, grades.judged_offsets)
    )
    return ndcg_batch(
        grades.ranked_grades,
        grades.offsets,
        k=spec.k,
        ideal_grades=ideal,
        ideal_offsets=ideal_offsets,
        gain=spec.gain,
        discount=spec.discount,
        ideal_depth=spec.ideal_depth,
        unjudged=spec.unjudged,
        negative=spec.negative,
    )


def metric_points_build(result_list, spec, *, as_of, pairs=None, only=None) -> list[MetricPoint]:
    """Unsaved per-query points of ``result_list`` (restricted to ``only`` query ids)."""
    # Only the given queries are read from PostgreSQL, so a refresh after one grade
    # costs one query's worth of rows, not the project's.
    query_ids = None if only is None else sorted(only)
    grades, result = result_list_evaluate(
        result_list, spec, as_of=as_of, pairs=pairs, query_ids=query_ids
    )
    now = timezone.now()
    return [
        MetricPoint(
            result_list=result_list,
            query_id=int(grades.query_ids[i]),
            metric=spec.name,
            as_of=as_of,
            value=float(result.ndcg[i]),
            dcg=float(result.dcg[i]),
            idcg=float(result.idcg[i]),
            judged=int(result.judged[i]),
            retrieved=int(result.retrieved[i]),
            judgements=int(grades.judgements[i]),
            queries=1,
            zero_idcg=int(result.all_irrelevant[i]),
            computed_at=now,
        )
        for i in range(len(grades.query_ids))
    ]


def overall_point(result_list, spec, *, as_of, judged_queries=None) -> MetricPoint | None:
    """The mean over the latest per-query points as of ``as_of`` (None if there are none).

    It carries the mean's bootstrap interval (``INTERVAL_*``), so that the overview
    reads it instead of resampling ten thousand queries on every request. A mean over
    all queries also counts the judged queries the list did not return, at 0: those
    of ``judged_queries`` (the project's query ids with a current grade as of
    ``as_of``), read here unless given.
    """
    rows = latest_values(result_list, spec, as_of=as_of)
    if not rows:
        return None
    names = ("query_id", "value", "judged", "retrieved", "judgements", "zero_idcg")
    columns = dict(zip(names, map(np.array, zip(*rows, strict=True)), strict=True))
    unreturned = 0
    if spec.mean_over == "all":
        if judged_queries is None:
            judged_queries = selectors.judged_query_ids(result_list.project_id, as_of=as_of)
        unreturned = unreturned_count(judged_queries, columns["query_id"])
    return _overall_of(result_list, spec, as_of=as_of, columns=columns, unreturned=unreturned)


def unreturned_count(judged_queries: np.ndarray, returned: np.ndarray) -> int:
    """How many of the judged queries are not among the list's returned ones."""
    return len(np.setdiff1d(judged_queries, returned, assume_unique=True))


def _overall_of(result_list, spec, *, as_of, columns, unreturned, interval=None) -> MetricPoint:
    """The overall point of the per-query ``columns`` (arrays in query order: value,
    judged, retrieved, judgements, zero_idcg) and ``unreturned`` judged queries the list
    did not return; ``interval`` is ``overall_interval`` of the counted values,
    computed here unless given."""
    values, judgements = columns["value"], columns["judgements"]
    # The mean is summed exactly (math.fsum, in query order) rather than with SQL's
    # AVG, whose floating-point result depends on the order rows are scanned in:
    # a rebuild must reproduce the stored value to the last bit.
    mean = query_mean(values, judgements, over=spec.mean_over, unreturned=unreturned)
    if interval is None:
        interval = overall_interval(mean.counted)
    counted = judgements > 0 if spec.mean_over == "judged" else slice(None)
    return MetricPoint(
        result_list=result_list,
        query=None,
        metric=spec.name,
        as_of=as_of,
        # With no query to count (no judged query yet) the mean is stored as 0 over
        # 0 queries; pages show it as missing.
        value=mean.mean,
        judged=int(np.sum(columns["judged"])),
        retrieved=int(np.sum(columns["retrieved"])),
        judgements=int(np.sum(judgements)),
        queries=mean.queries,
        zero_idcg=int(np.sum(np.asarray(columns["zero_idcg"], dtype=bool)[counted])),
        computed_at=timezone.now(),
        ci_low=interval.low,
        ci_high=interval.high,
        ci_confidence=interval.confidence,
        ci_resamples=interval.resamples,
        ci_seed=INTERVAL_SEED,
        queries_judged=int(np.count_nonzero(judgements > 0)),
        queries_returned=len(values),
    )


def overall_interval(values: np.ndarray) -> ConfidenceInterval:
    """The interval stored with an overall point, over per-query values in query order."""
    return bootstrap_mean_ci(
        values,
        confidence=INTERVAL_CONFIDENCE,
        n_resamples=INTERVAL_RESAMPLES,
        seed=INTERVAL_SEED,
    )


def overall_intervals(values: np.ndarray) -> list[ConfidenceInterval]:
    """``overall_interval`` of each row of ``values`` (series over as many queries),
    with the resamples drawn once for all rows."""
    return bootstrap_mean_cis(
        values,
        confidence=INTERVAL_CONFIDENCE,
        n_resamples=INTERVAL_RESAMPLES,
        seed=INTERVAL_SEED,
    )


def latest_values(result_list, spec, *, as_of) -> list[tuple]:
    """Each query's latest point as of ``as_of``: (query_id, value, judged, retrieved,
    judgements, zero_idcg) in query order.

    When no point of the list is newer than ``as_of`` (a refresh, or a rebuild
    moving forward), the latest points are LatestMetricPoint's rows; otherwise
    (rebuilding a past bucket) they are found in the series itself.
    """
    columns = ("query_id", "value", "judged", "retrieved", "judgements", "zero_idcg")
    latest = LatestMetricPoint.objects.filter(result_list=result_list, metric=spec.name)
    if not latest.filter(as_of__gt=as_of).exists():
        return list(latest.order_by("query_id").values_list(*columns))
    points = (
        MetricPoint.objects.filter(
            result_list=result_list, metric=spec.name, query__isnull=False, as_of__lte=as_of
        )
        .order_by("query_id", "-as_of")
        .distinct("query_id")
    )
    return list(points.values_list(*columns))


def metric_points_store(points: list[MetricPoint]) -> None:
    """Insert or replace points on (result list, query, metric, as_of): re-runs are idempotent.

    Per-query points also replace LatestMetricPoint's copy unless it is newer.
    """
    MetricPoint.objects.bulk_create(
        points,
        update_conflicts=True,
        unique_fields=["result_list", "query", "metric", "as_of"],
        update_fields=POINT_FIELDS,
        batch_size=5000,
    )
    _latest_store([point for point in points if point.query_id is not None])


def _latest_store(points: list[MetricPoint]) -> None:
    # One row per key, the newest: ON CONFLICT cannot touch a row twice in a statement.
    newest: dict[tuple, MetricPoint] = {}
    for point in points:
        key = (point.result_list_id, point.metric, point.query_id)
        if key not in newest or newest[key].as_of < point.as_of:
            newest[key] = point
    rows = list(newest.values())
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 10_000):
            batch = rows[start : start + 10_000]
            columns = ["result_list_id", "query_id", "metric", *LATEST_FIELDS]
            cursor.execute(
                LATEST_UPSERT_SQL,
                [[getattr(point, column) for point in batch] for column in columns],
            )


def queries_mark_stale(*, query_ids) -> None:
    """Mark queries whose judgements changed; one row per query however many grades arrive."""
    StaleQuery.objects.bulk_create(
        [StaleQuery(query_id=query_id) for query_id in query_ids], ignore_conflicts=True
    )


@transaction.atomic
def metrics_refresh(*, project: Project, now: dt.datetime | None = None) -> int:
    """Recompute the stored series for stale queries, at the current hour's bucket (or
    the series' newest moment, if a rebuild left one ahead of the clock).

    Result lists with no point yet are computed whole. Stale marks are taken with
    SKIP LOCKED so concurrent workers split the work instead of repeating it.
    Returns the number of per-query points written.
    """
    hour = buckets.bucket_end(now or timezone.now(), "hour")
    marks = StaleQuery.objects.select_for_update(skip_locked=True).filter(query__project=project)
    stale = set(marks.values_list("query_id", flat=True))
    StaleQuery.objects.filter(query_id__in=stale).delete()
    revisions.revisions_recount(query_ids=stale)
    written = 0
    for spec in stored_specs(project):
        as_of = _refresh_moment(project, spec, hour)
        judged_queries = None
        for result_list in project.result_lists.all():
            computed = LatestMetricPoint.objects.filter(result_list=result_list, metric=spec.name)
            only = stale if computed.exists() else None
            if only is not None and not only:
                continue
            points = metric_points_build(result_list, spec, as_of=as_of, only=only)
            written += len(points)
            if judged_queries is None and spec.mean_over == "all":
                judged_queries = selectors.judged_query_ids(project.pk, as_of=as_of)
            _store_with_overall(result_list, spec, points, as_of=as_of, judged=judged_queries)
    return written


def _refresh_moment(project: Project, spec: MetricSpec, hour: dt.datetime) -> dt.datetime:
    """The current hour's end, or the series' newest moment if that is later.

    A rebuild's last bucket ends on the next boundary (tomorrow's midnight for
    daily buckets), ahead of the clock. A refresh written at an earlier moment
    would sit behind that point and never be read as the latest; rewriting the
    future point instead keeps it what it claims: the value as of its moment,
    with every judgement recorded so far.
    """
    newest = MetricPoint.objects.filter(
        result_list__project=project, metric=spec.name, query__isnull=True
    ).aggregate(newest=Max("as_of"))["newest"]
    return max(hour, newest) if newest else hour


def metrics_rebuild(*, project: Project, since, until=None, every="day", progress=None) -> int:
    """Rebuild the stored series from the judgement log as of each bucket end, then
    recount the project's revisions (``metrics.revisions``).

    Judgements after a bucket's end are ignored for it; result lists count from
    their capture time. Each bucket commits on its own, and re-running replaces
    the same rows, so an interrupted rebuild can simply be run again. The log and
    the hits are read once for every bucket (``metrics.replay``).
    """
    ends = buckets.bucket_ends(since, until or timezone.now(), every)
    if not ends:
        return 0
    log = replay.ProjectReplay(project.pk, until=ends[-1])
    written = 0
    for done, as_of in enumerate(ends, start=1):
        with transaction.atomic():
            written += _rebuild_bucket(project, as_of, log)
        if progress:
            progress(done, len(ends), as_of)
    with transaction.atomic():
        revisions.revisions_recount(query_ids=project.queries.values_list("pk", flat=True))
    return written


def _rebuild_bucket(project: Project, as_of: dt.datetime, log: replay.ProjectReplay) -> int:
    written = 0
    result_lists = list(project.result_lists.filter(captured_at__lte=as_of))
    for spec in stored_specs(project):
        pairs = log.pair_grades(as_of, spec.consensus)
        judged_queries = np.unique(pairs.query_ids)
        built = {}
        for result_list in result_lists:
            columns = _rebuilt_columns(log, result_list, spec, pairs)
            replay.points_upsert(
                result_list_id=result_list.pk, metric=spec.name, as_of=as_of, columns=columns
            )
            built[result_list] = columns
            written += len(columns["query_id"])
        _rebuilt_overalls_store(spec, built, as_of=as_of, judged_queries=judged_queries)
    return written


def _rebuilt_columns(log, result_list, spec, pairs) -> dict[str, np.ndarray]:
    """What ``metric_points_build`` computes, as one array per stored column."""
    grades = log.result_list_grades(result_list.pk, pairs, depth=_depth(spec))
    result = _evaluated(grades, spec)
    return {
        "query_id": grades.query_ids,
        "value": result.ndcg,
        "dcg": result.dcg,
        "idcg": result.idcg,
        "judged": result.judged,
        "retrieved": result.retrieved,
        "judgements": grades.judgements,
        "zero_idcg": result.all_irrelevant,
    }


def _rebuilt_overalls_store(spec, built: dict, *, as_of, judged_queries) -> None:
    """Store the overall point of each result list of a bucket just written.

    The points just written (``built``, result list -> columns) are every query's
    latest as of ``as_of`` unless the series holds a query they lack (one that lost
    its hits): the latest table has a row for every query of the series, so equal
    counts mean none is missing and the mean is taken from memory. Lists whose means
    count as many queries draw their intervals together (each gets the interval it
    would get alone). Otherwise the point is read as ``overall_point`` reads it.
    ``judged_queries``: the project's query ids with a current grade as of ``as_of``.
    """
    by_size: dict[int, list] = {}
    for result_list, columns in built.items():
        size = len(columns["query_id"])
        latest = LatestMetricPoint.objects.filter(result_list=result_list, metric=spec.name)
        if size and latest.count() == size:
            unreturned = 0
            if spec.mean_over == "all":
                unreturned = unreturned_count(judged_queries, columns["query_id"])
            mean = query_mean(
                columns["value"], columns["judgements"], over=spec.mean_over, unreturned=unreturned
            )
            group = by_size.setdefault(mean.queries, [])
            group.append((result_list, columns, unreturned, mean.counted))
        elif overall := overall_point(
            result_list, spec, as_of=as_of, judged_queries=judged_queries
        ):
            metric_points_store([overall])
    for group in by_size.values():
        intervals = overall_intervals(np.array([counted for *_, counted in group]))
        for (result_list, columns, unreturned, _), interval in zip(group, intervals, strict=True):
            overall = _overall_of(
                result_list,
                spec,
                as_of=as_of,
                columns=columns,
                unreturned=unreturned,
                interval=interval,
            )
            metric_points_store([overall])


def _store_with_overall(result_list, spec, points, *, as_of, judged=None) -> None:
    metric_points_store(points)
    overall = overall_point(result_list, spec, as_of=as_of, judged_queries=judged)
    if overall is not None:
        metric_points_store([overall])


def metrics_schedule_refresh(*, project_id: int, query_ids) -> None:
    """Mark queries stale and, once the transaction commits, queue a refresh.

    Called by every write that changes grades or rankings. The refresh runs as a
    task (django.tasks) so that grading does not wait for it where a worker queue
    is configured; many marks before the task runs cost one recomputation.
    """
    from metrics.tasks import project_metrics_refresh

    queries_mark_stale(query_ids=query_ids)
    transaction.on_commit(lambda: project_metrics_refresh.enqueue(project_id))
