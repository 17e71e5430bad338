"""Recomputing a whole result list's stored points, split into chunks of queries that
task workers run side by side.

``result_list_recompute`` cuts the list's queries (in id order) into ``chunks`` runs
and queues one ``result_list_chunk_recompute`` task per run. Each chunk computes and
stores its queries' points exactly as a refresh computes any query's (per-query
points do not depend on each other), and the chunk that finds every chunk's points
committed (each point carries the recompute's stamp as ``computed_at``) stores the
overall point, read as the refresh reads it. So the
stored numbers are those of an unsplit recompute; ``tests/metrics/test_recompute.py``
compares them. With the immediate task backend the chunks run one after the other, in
the calling process; with the database backend each free worker takes one.

A chunk holds the list's recompute lock shared, and ``metrics_refresh`` holds it
exclusively while it writes the list: chunks run side by side, but a refresh that
recomputes a just-graded query waits for the chunks reading the list's grades then,
so a chunk's older reading never lands after the refresh's newer one.
"""

import datetime as dt

import numpy as np
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from judgements.models import RankedHits, ResultList
from judgements.packed import packed_fill
from metrics import buckets, log_replay, sources
from metrics.evaluate import point_columns, result_list_evaluate
from metrics.models import MetricPoint
from metrics.overall import overall_store
from metrics.refresh import refresh_moment, result_list_lock
from metrics.registry import project_spec

# Queries read and written at a time within a chunk: parts bound the arrays (100 hits a
# query: 13 MB of grades). Values do not depend on the part a query is computed in
# (metrics.core.batch_dcg).
PART_QUERIES = 16_384


def _list_queries(result_list):
    """The list's queries with at least one hit, as the list's reads count them."""
    return RankedHits.objects.filter(result_list=result_list, hits__gt=0)


def chunk_firsts(result_list: ResultList, chunks: int) -> list[int]:
    """The first query id of each of ``chunks`` runs of the list's queries (in id order,
    of about as many queries each; fewer runs when the list has fewer queries)."""
    if chunks < 1:
        raise ValueError("chunks must be at least 1.")
    query_ids = np.array(
        _list_queries(result_list).order_by("query_id").values_list("query_id", flat=True)
    )
    return [int(run[0]) for run in np.array_split(query_ids, chunks) if len(run)]


def result_list_recompute(*, result_list: ResultList, chunks: int = 1, as_of=None) -> list:
    """Queue the recompute of every query's point of ``result_list`` (the project's
    stored metric) as of ``as_of`` (the refresh's moment, the current hour's end, unless
    given), in ``chunks`` tasks of about as many queries each. Returns the tasks' results
    (django.tasks ``TaskResult``), in query order."""
    firsts = chunk_firsts(result_list, chunks)
    if as_of is None:
        project = result_list.project
        hour = buckets.bucket_end(timezone.now(), "hour")
        as_of = refresh_moment(project, project_spec(project), hour)
    # Every point of this recompute carries this moment as computed_at: the chunks find
    # by it which others have committed (_overall_store_when_last).
    stamp = timezone.now().isoformat()
    return [
        result_list_chunk_recompute.enqueue(result_list.pk, as_of.isoformat(), stamp, firsts, n)
        for n in range(len(firsts))
    ]


@task()
def result_list_chunk_recompute(
    result_list_id: int, as_of: str, stamp: str, firsts: list[int], chunk: int
) -> int:
    """Store the points as of ``as_of`` (ISO 8601) of the list's queries from
    ``firsts[chunk]`` up to the next chunk's first, computed at ``stamp``; then, if every
    chunk's points are in, the overall point. Returns the per-query points written."""
    result_list = ResultList.objects.select_related("project").filter(pk=result_list_id).first()
    if result_list is None:
        return 0
    moment, computed_at = dt.datetime.fromisoformat(as_of), dt.datetime.fromisoformat(stamp)
    spec = project_spec(result_list.project)
    queries = _list_queries(result_list).filter(query_id__gte=firsts[chunk])
    if chunk + 1 < len(firsts):
        queries = queries.filter(query_id__lt=firsts[chunk + 1])
    # Read once: the list's queries are its hits', which the recompute lock below does
    # not guard (it keeps refreshes' point writes apart from the chunks').
    query_ids = list(queries.order_by("query_id").values_list("query_id", flat=True))
    # Filled first, in a transaction of its own that waits for writers of the same
    # queries, so that the chunk reads packed rows rather than the pair grades.
    packed_fill(result_list.project_id, query_ids)
    with transaction.atomic():
        result_list_lock(result_list.pk, shared=True)
        fresh = sources.freshness(result_list.project, as_of=moment)
        for start in range(0, len(query_ids), PART_QUERIES):
            part = query_ids[start : start + PART_QUERIES]
            grades, result = result_list_evaluate(
                result_list, spec, as_of=moment, fresh=fresh, query_ids=part
            )
            # The rebuild's bulk write (COPY, then one upsert of each table), the same
            # rows metric_points_store writes.
            log_replay.points_upsert(
                result_list_id=result_list.pk,
                metric=spec.name,
                as_of=moment,
                columns=point_columns(grades, result),
                computed_at=computed_at,
            )
    _overall_store_when_last(result_list, spec, moment, computed_at, firsts)
    return len(query_ids)


@transaction.atomic
def _overall_store_when_last(result_list: ResultList, spec, as_of, computed_at, firsts) -> None:
    """Store the overall point once every chunk's points have committed: each chunk's
    first query has its point of ``as_of`` computed at this recompute's stamp (a chunk
    commits its points at once).

    Chunks take the list's row lock here one at a time, each after its points have
    committed: the last to finish then sees every other chunk's points. The recompute
    lock comes first, shared, as a refresh takes it before its points' foreign keys lock
    the row (FOR NO KEY UPDATE does not block those), and keeps the overall point from
    being read between a refresh's reading of the grades and its commit. (A refresh
    that rewrote a chunk's first query meanwhile stored the overall point itself.)
    """
    result_list_lock(result_list.pk, shared=True)
    ResultList.objects.select_for_update(no_key=True).filter(pk=result_list.pk).first()
    committed = MetricPoint.objects.filter(
        result_list=result_list,
        metric=spec.name,
        as_of=as_of,
        query_id__in=firsts,
        computed_at=computed_at,
    )
    if committed.count() < len(firsts):
        return
    overall_store(result_list, spec, as_of=as_of)
