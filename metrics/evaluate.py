"""Computing metrics: a result list's grades in (from the source the freshness rule
names), ``metrics.core`` in the middle, per-query and overall points out (unsaved)."""

import numpy as np
from django.utils import timezone

from judgements.models import ResultList
from metrics import packed_reads, selectors, sources
from metrics.core import ndcg_batch, query_mean
from metrics.core.stats import ConfidenceInterval, bootstrap_mean_ci, bootstrap_mean_cis
from metrics.models import MetricPoint
from metrics.registry import MetricSpec
from metrics.selectors import latest_values
from metrics.sources import Freshness

# The interval stored with every overall point, and shown by the overview: 1,000
# resamples is the usual minimum for a 95% percentile interval (Efron & Tibshirani,
# ch. 19); the comparison page, which decides between lists, draws 10,000.
INTERVAL_CONFIDENCE = 0.95
INTERVAL_RESAMPLES = 1_000
INTERVAL_SEED = 0


def result_list_evaluate(
    result_list: ResultList,
    spec: MetricSpec,
    *,
    as_of=None,
    fresh: Freshness | None = None,
    pairs=None,
    query_ids=None,
):
    """Evaluate the queries of ``result_list`` (all, or ``query_ids``).

    Returns (ResultListGrades, BatchNdcgResult). Without ``pairs`` the grades are read
    from the source ``fresh`` (the freshness rule's answer, asked here for ``as_of``
    unless given) names: packed, or the judgement log; ``pairs`` may be passed in when
    several result lists are evaluated against the log's grades.
    """
    # The rule without a spec (sources.freshness): the project's row is not needed.
    fresh = fresh or sources.grades_freshness(result_list.project_id, as_of=as_of)
    grades, _ = _list_grades(result_list, spec, fresh=fresh, pairs=pairs, query_ids=query_ids)
    return grades, ndcg_of(grades, spec)


def result_lists_evaluate(result_lists, spec: MetricSpec, *, fresh: Freshness, pairs=None):
    """``result_list_evaluate`` of several lists of one project, by list id; the log is
    replayed at most once, when ``fresh`` says the packed grades do not hold (``pairs``,
    given, are used for every list)."""
    evaluated = {}
    for result_list in result_lists:
        grades, pairs = _list_grades(result_list, spec, fresh=fresh, pairs=pairs, query_ids=None)
        evaluated[result_list.pk] = grades, ndcg_of(grades, spec)
    return evaluated


def _list_grades(result_list, spec, *, fresh: Freshness, pairs, query_ids):
    """The list's grades, and the pair grades they were laid out from (None if packed).

    Packed when no ``pairs`` are given and ``fresh`` says the packed rows hold; otherwise
    from ``pairs``, replayed from the log when not given.
    """
    if pairs is None:
        if fresh.derived:
            packed = packed_reads.stored_result_list_grades(
                result_list.pk,
                result_list.project_id,
                as_of=fresh.moment,
                policy=spec.consensus,
                depth=read_depth(spec),
                query_ids=query_ids,
            )
            if packed is not None:
                return packed, None
        pairs = selectors.pair_grades(
            result_list.project_id, fresh=fresh, policy=spec.consensus, query_ids=query_ids
        )
    grades = packed_reads.result_list_grades(
        result_list.pk, pairs, depth=read_depth(spec), query_ids=query_ids
    )
    return grades, pairs


def read_depth(spec: MetricSpec) -> int | None:
    """Hits read per query: only the top k is needed unless unjudged hits are removed
    first or the ideal is built from every returned hit."""
    return spec.k if spec.unjudged == "zero" and spec.ideal == "judged" else None


def ndcg_of(grades, spec: MetricSpec):
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


def point_columns(grades, result) -> dict[str, np.ndarray]:
    """The stored per-query columns of an evaluation (``log_replay.points_upsert``)."""
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


def metric_points_build(
    result_list, spec, *, as_of, pairs=None, only=None, fresh: Freshness | None = None
) -> list[MetricPoint]:
    """Unsaved per-query points of ``result_list`` (restricted to ``only`` query ids), as
    of ``as_of``; ``fresh`` is the freshness rule's answer for it, asked here unless given."""
    # Only the given queries are read from PostgreSQL, so a refresh after one grade
    # costs one query's worth of rows, not the project's.
    query_ids = None if only is None else sorted(only)
    grades, result = result_list_evaluate(
        result_list, spec, as_of=as_of, fresh=fresh, pairs=pairs, query_ids=query_ids
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
    read = overall_columns(result_list, spec, as_of=as_of, judged_queries=judged_queries)
    if read is None:
        return None
    columns, unreturned, _ = read
    return overall_of(result_list, spec, as_of=as_of, columns=columns, unreturned=len(unreturned))


def overall_columns(result_list, spec, *, as_of, judged_queries=None):
    """What ``overall_point`` is computed from: the latest per-query points as of
    ``as_of`` (columns by name, in query order), the ids of the judged queries the
    list did not return (empty unless the mean is over all queries) and whether the
    points are the list's latest ones (``latest_values``); None if the list has no
    point."""
    columns, latest = latest_values(result_list, spec, as_of=as_of)
    if len(columns["query_id"]) == 0:
        return None
    unreturned = np.zeros(0, dtype=np.int64)
    if spec.mean_over == "all":
        if judged_queries is None:
            fresh = sources.freshness(result_list.project, as_of=as_of)
            judged_queries = selectors.judged_query_ids(result_list.project_id, fresh=fresh)
        unreturned = np.setdiff1d(judged_queries, columns["query_id"], assume_unique=True)
    return columns, unreturned, latest


def unreturned_count(judged_queries: np.ndarray, returned: np.ndarray) -> int:
    """How many of the judged queries are not among the list's returned ones."""
    return len(np.setdiff1d(judged_queries, returned, assume_unique=True))


def overall_of(result_list, spec, *, as_of, columns, unreturned, interval=None) -> MetricPoint:
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
