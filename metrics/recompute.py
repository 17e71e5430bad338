"""Recomputing a whole result list's stored points, split into chunks of queries that
task workers run side by side.

``result_list_recompute`` cuts the list's queries (in id order) into ``chunks`` runs
and queues one ``result_list_chunk_recompute`` task per run. Each chunk computes and
stores its queries' points exactly as a refresh computes any query's (per-query
points do not depend on each other), and the chunk that finds every query of the list
stored at the moment stores the overall point, read as the refresh reads it. So the
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
from metrics import buckets, log_replay, sources
from metrics.evaluate import overall_point, point_columns, result_list_evaluate
from metrics.models import LatestMetricPoint
from metrics.refresh import metric_points_store, refresh_moment, result_list_lock
from metrics.registry import project_spec

# Queries read and written at a time within a chunk. The packed read is given their ids,
# and its cost grows with the ids times the rows it scans (metrics.selectors'
# STORED_RANKED_SQL): 100k ids at once took 32 s, against about 2 s in parts. Values do
# not depend on the part a query is computed in (metrics.core.batch_dcg).
PART_QUERIES = 5_000


def _list_queries(result_list):
    """The list's queries with at least one hit, as the list's reads count them."""
    return RankedHits.objects.filter(result_list=result_list, hits__gt=0)


def result_list_recompute(*, result_list: ResultList, chunks: int = 1, as_of=None) -> list:
    """Queue the recompute of every query's point of ``result_list`` (the project's
    stored metric) as of ``as_of`` (the refresh's moment, the current hour's end, unless
    given), in ``chunks`` tasks of about as many queries each. Returns the tasks' results
    (django.tasks ``TaskResult``), in query order."""
    if chunks < 1:
        raise ValueError("chunks must be at least 1.")
    project = result_list.project
    spec = project_spec(project)
    if as_of is None:
        as_of = refresh_moment(project, spec, buckets.bucket_end(timezone.now(), "hour"))
    query_ids = np.array(
        _list_queries(result_list).order_by("query_id").values_list("query_id", flat=True)
    )
    runs = [run for run in np.array_split(query_ids, chunks) if len(run)]
    return [
        result_list_chunk_recompute.enqueue(
            result_list.pk, int(run[0]), int(run[-1]), as_of.isoformat()
        )
        for run in runs
    ]


@task()
def result_list_chunk_recompute(
    result_list_id: int, first_query_id: int, last_query_id: int, as_of: str
) -> int:
    """Store the points of the list's queries with ids from ``first_query_id`` to
    ``last_query_id`` as of ``as_of`` (ISO 8601), then the overall point if every query
    of the list has its point of that moment. Returns the per-query points written."""
    result_list = ResultList.objects.select_related("project").filter(pk=result_list_id).first()
    if result_list is None:
        return 0
    moment = dt.datetime.fromisoformat(as_of)
    spec = project_spec(result_list.project)
    with transaction.atomic():
        result_list_lock(result_list.pk, shared=True)
        query_ids = list(
            _list_queries(result_list)
            .filter(query_id__gte=first_query_id, query_id__lte=last_query_id)
            .order_by("query_id")
            .values_list("query_id", flat=True)
        )
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
            )
    _overall_store_when_complete(result_list, spec, moment)
    return len(query_ids)


@transaction.atomic
def _overall_store_when_complete(result_list: ResultList, spec, as_of: dt.datetime) -> None:
    """Store the overall point once every query of the list has its point as of ``as_of``.

    Chunks take the list's row lock here one at a time, each after its points have
    committed: the last to finish then sees every other chunk's points. Two chunks
    may both find the list complete; both store the same point. The recompute lock
    comes first, shared, as a refresh takes it before its points' foreign keys lock
    the row (FOR NO KEY UPDATE does not block those), and keeps the overall point
    from being read between a refresh's reading of the grades and its commit.
    """
    result_list_lock(result_list.pk, shared=True)
    ResultList.objects.select_for_update(no_key=True).filter(pk=result_list.pk).first()
    latest = LatestMetricPoint.objects.filter(result_list=result_list, metric=spec.name)
    queries = _list_queries(result_list).count()
    if latest.filter(as_of__gte=as_of).count() < queries:
        return
    overall = overall_point(result_list, spec, as_of=as_of)
    if overall is not None:
        metric_points_store([overall])
