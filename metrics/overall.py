"""A result list's overall point after a grade: updated from the points a refresh
replaces, in a number of rows that does not grow with the list.

The mean over a list's queries and its counts are kept in ``OverallSum`` (the exact sum
of the counted values, ``metrics.core.exact_sum``, so the mean is ``math.fsum(values) /
n`` to the last bit) and, for a mean over all queries, the judged queries the list did
not return in ``UnreturnedQuery``. A refresh reads the old latest points of its stale
queries, stores their new ones, and takes the difference (``overall_update``): the mean
and every count are exactly what a full computation (``evaluate.overall_point``) gives.

The bootstrap interval resamples every query and cannot be updated so: the refresh's
point keeps the interval of the list's previous state, marked ``ci_pending``, and a task
(``metrics.tasks.result_list_interval``, one waiting per list and metric) computes the
whole point again (``overall_store``), the interval with it. Pages and the API say when
an interval is pending.

Where the sums are missing (a list's first points, after a rebuild, a split recompute,
``derived_state --rebuild``, a deleted query: every write of the latest points but the
refresh's own deletes them, triggers of migration 0005), the refresh computes the point
in full (``overall_store``), which writes them again.
"""

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from metrics.core.exact_sum import exact_sum, mean_of, scaled
from metrics.evaluate import INTERVAL_SEED, overall_columns, overall_of
from metrics.models import (
    LATEST_READ,
    MetricPoint,
    OverallSum,
    UnreturnedQuery,
)

# The judged ones among some queries of a project (what selectors.judged_query_ids
# reads for the whole project).
JUDGED_AMONG_SQL = """
SELECT grades.query_id FROM judgements_querygrades grades
WHERE grades.query_id = ANY(%s) AND grades.judged > 0
"""


def overall_store(result_list, spec, *, as_of, judged_queries=None) -> MetricPoint | None:
    """Compute the overall point of ``result_list`` in full (``evaluate.overall_point``),
    store it, and write the list's sums when it was read from the latest points.
    Returns the point (None if the list has no point)."""
    from metrics.refresh import metric_points_store

    read = overall_columns(result_list, spec, as_of=as_of, judged_queries=judged_queries)
    if read is None:
        return None
    columns, unreturned, latest = read
    overall = overall_of(
        result_list, spec, as_of=as_of, columns=columns, unreturned=len(unreturned)
    )
    metric_points_store([overall])
    if latest:
        sums_write(result_list, spec, columns, unreturned)
    return overall


def sums_write(result_list, spec, columns: dict, unreturned: np.ndarray) -> None:
    """Replace the list's sums by those of its latest points' ``columns`` and the judged
    queries it did not return (``unreturned``, ids; empty unless the mean is over all)."""
    OverallSum.objects.update_or_create(
        result_list=result_list,
        metric=spec.name,
        defaults=sums_of_columns(spec, columns, len(unreturned)),
    )
    kept = UnreturnedQuery.objects.filter(result_list=result_list, metric=spec.name)
    kept.delete()
    UnreturnedQuery.objects.bulk_create(
        [
            UnreturnedQuery(result_list=result_list, metric=spec.name, query_id=query_id)
            for query_id in unreturned.tolist()
        ],
        batch_size=10_000,
    )


def sums_of_columns(spec, columns: dict, unreturned: int) -> dict:
    """The fields of ``OverallSum`` for latest points' ``columns`` (value, judged,
    retrieved, judgements, zero_idcg: arrays in any order) and ``unreturned`` judged
    queries the list did not return."""
    judgements = np.asarray(columns["judgements"])
    counted = judgements > 0 if spec.mean_over == "judged" else np.ones(len(judgements), bool)
    return {
        "total": str(exact_sum(np.asarray(columns["value"], dtype=np.float64)[counted])),
        "counted": int(np.count_nonzero(counted)),
        "unreturned": unreturned,
        "judged": int(np.sum(columns["judged"])),
        "retrieved": int(np.sum(columns["retrieved"])),
        "judgements": int(np.sum(judgements)),
        "zero_idcg": int(np.count_nonzero(np.asarray(columns["zero_idcg"])[counted])),
        "queries_judged": int(np.count_nonzero(judgements > 0)),
        "queries_returned": len(judgements),
    }


# The latest points of some queries (at least one) of a list, LATEST_READ's columns.
# This, the sums' read and their update are written out, as the refresh's other
# statements are (metrics.refresh.NEWEST_OVERALL_SQL says why).
LATEST_OF_QUERIES_SQL = f"""
SELECT {", ".join(LATEST_READ)} FROM metrics_latestmetricpoint
WHERE result_list_id = %s AND metric = %s AND query_id IN %s
"""
# Every field of the sums but their key.
SUMS_FIELDS = tuple(
    field.column
    for field in OverallSum._meta.concrete_fields
    if field.name not in ("id", "result_list", "metric")
)
SUMS_UPDATE_SQL = f"""
UPDATE metrics_overallsum SET {", ".join(f"{field} = %s" for field in SUMS_FIELDS)}
WHERE id = %s
"""

# The list's sums, locked, with the interval of its newest overall point as of the
# refresh's moment (previous_*), in one statement; no row when either is missing.
SUMS_AND_PREVIOUS_SQL = """
SELECT sums.*, previous.ci_low AS previous_ci_low, previous.ci_high AS previous_ci_high,
       previous.ci_confidence AS previous_ci_confidence,
       previous.ci_resamples AS previous_ci_resamples, previous.ci_seed AS previous_ci_seed,
       previous.ci_pending AS previous_ci_pending
FROM metrics_overallsum sums
JOIN LATERAL (
    SELECT point.ci_low, point.ci_high, point.ci_confidence, point.ci_resamples,
           point.ci_seed, point.ci_pending
    FROM metrics_metricpoint point
    WHERE point.result_list_id = sums.result_list_id AND point.metric = sums.metric
      AND point.query_id IS NULL AND point.as_of <= %(as_of)s
    ORDER BY point.as_of DESC
    LIMIT 1
) previous ON true
WHERE sums.result_list_id = %(result_list)s AND sums.metric = %(metric)s
FOR UPDATE OF sums
"""


def overall_update(result_list, spec, points, *, as_of, queries) -> MetricPoint | None:
    """Store ``points`` (new per-query points of ``result_list`` for some of the stale
    ``queries``) and the overall point they make, from the list's sums and the old
    points of ``queries`` alone. Returns the overall point, or None without storing
    anything when the list has no sums or no overall point to update (the caller then
    computes it in full)."""
    from metrics.refresh import metric_points_store

    params = {"result_list": result_list.pk, "metric": spec.name, "as_of": as_of}
    sums = next(iter(OverallSum.objects.raw(SUMS_AND_PREVIOUS_SQL, params)), None)
    if sums is None:  # No sums, or no overall point to update.
        return None
    queries = sorted(queries)
    with connection.cursor() as cursor:
        # A list of values, not an array: on small tables, "= ANY(array)" was planned as
        # a scan of every latest point (test_overall_sums checks the rows read).
        cursor.execute(LATEST_OF_QUERIES_SQL, [result_list.pk, spec.name, tuple(queries)])
        old = {row[0]: row[1:] for row in cursor.fetchall()}
    with keeping_sums():
        written = metric_points_store(points, returning=True)
    # The latest points now: those just written, else the old ones (a query whose point
    # is newer than this refresh's keeps it).
    new = old | {row[0]: row[1:] for row in written}
    changed = old != new
    for rows, sign in ((old, -1), (new, 1)):
        _count(sums, spec, rows.values(), sign)
    if spec.mean_over == "all":
        changed |= _unreturned_update(sums, result_list, spec, queries, returned=set(new))
    _sums_save(sums)
    counted = sums.counted + sums.unreturned
    overall = MetricPoint(
        result_list=result_list,
        query=None,
        metric=spec.name,
        as_of=as_of,
        value=mean_of(int(sums.total), counted),
        judged=sums.judged,
        retrieved=sums.retrieved,
        judgements=sums.judgements,
        queries=counted,
        zero_idcg=sums.zero_idcg,
        computed_at=timezone.now(),
        ci_low=sums.previous_ci_low,
        ci_high=sums.previous_ci_high,
        ci_confidence=sums.previous_ci_confidence,
        ci_resamples=sums.previous_ci_resamples,
        ci_seed=INTERVAL_SEED if sums.previous_ci_seed is None else sums.previous_ci_seed,
        queries_judged=sums.queries_judged,
        queries_returned=sums.queries_returned,
        # The interval is of the values the previous point was over.
        ci_pending=sums.previous_ci_pending or changed,
    )
    metric_points_store([overall])
    return overall


def _sums_save(sums: OverallSum) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            SUMS_UPDATE_SQL, [getattr(sums, field) for field in SUMS_FIELDS] + [sums.pk]
        )


def _count(sums: OverallSum, spec, rows, sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) latest points' part of the sums."""
    total = int(sums.total)
    for value, judged, retrieved, judgements, zero_idcg in rows:
        sums.judged += sign * judged
        sums.retrieved += sign * retrieved
        sums.judgements += sign * judgements
        sums.queries_returned += sign
        sums.queries_judged += sign * (judgements > 0)
        if spec.mean_over == "all" or judgements > 0:
            total += sign * scaled(value)
            sums.counted += sign
            sums.zero_idcg += sign * bool(zero_idcg)
    sums.total = str(total)


def _unreturned_update(sums, result_list, spec, queries, *, returned: set[int]) -> bool:
    """Count again which of ``queries`` are judged and not returned by the list (those
    with a latest point, ``returned``); True if any changed."""
    with connection.cursor() as cursor:
        cursor.execute(JUDGED_AMONG_SQL, [list(queries)])
        judged = {query_id for (query_id,) in cursor.fetchall()}
    kept = UnreturnedQuery.objects.filter(
        result_list=result_list, metric=spec.name, query_id__in=queries
    )
    before = set(kept.values_list("query_id", flat=True))
    after = judged - returned
    if before == after:
        return False
    kept.filter(query_id__in=before - after).delete()
    UnreturnedQuery.objects.bulk_create(
        [
            UnreturnedQuery(result_list=result_list, metric=spec.name, query_id=query_id)
            for query_id in sorted(after - before)
        ]
    )
    sums.unreturned += len(after) - len(before)
    return True


class keeping_sums:
    """Within it, writes of latest points leave the sums alone (the refresh updates
    them itself): the triggers of migration 0005 skip while ``metrics.keeping_sums``
    is on."""

    def __enter__(self):
        self._set("on")

    def __exit__(self, *exc):
        # After an error the transaction is being rolled back, and the setting with it.
        if connection.needs_rollback or exc[0] is not None:
            return
        self._set("off")

    @staticmethod
    def _set(value: str) -> None:
        assert transaction.get_connection().in_atomic_block
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('metrics.keeping_sums', %s, true)", [value])
