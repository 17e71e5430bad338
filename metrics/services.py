"""Recomputing stored metrics: selectors in, metrics.core in the middle, rows out."""

import datetime as dt
import math

from django.db import transaction
from django.db.models import Count, Sum
from django.utils import timezone

from judgements.models import Project, ResultList
from metrics import buckets, selectors
from metrics.core import ndcg_batch
from metrics.models import MetricPoint, StaleQuery
from metrics.registry import MetricSpec, stored_specs

POINT_FIELDS = [
    "value",
    "dcg",
    "idcg",
    "judged",
    "retrieved",
    "judgements",
    "queries",
    "zero_idcg",
    "computed_at",
]


def result_list_evaluate(
    result_list: ResultList, spec: MetricSpec, *, as_of, pairs=None, query_ids=None
):
    """Evaluate the queries of ``result_list`` (all, or ``query_ids``).

    Returns (ResultListGrades, BatchNdcgResult). ``pairs`` may be passed in when
    several result lists are evaluated against the same grades.
    """
    if pairs is None:
        pairs = selectors.pair_grades(
            result_list.project_id, as_of=as_of, policy=spec.consensus, query_ids=query_ids
        )
    # Reading only the top k is exact unless unjudged hits are removed first or
    # the ideal is built from every returned hit.
    depth = spec.k if spec.unjudged == "zero" and spec.ideal == "judged" else None
    grades = selectors.result_list_grades(result_list.pk, pairs, depth=depth, query_ids=query_ids)
    ideal, ideal_offsets = (
        (grades.ranked_grades, grades.offsets)
        if spec.ideal == "returned"
        else (grades.judged_grades, grades.judged_offsets)
    )
    result = ndcg_batch(
        grades.ranked_grades,
        grades.offsets,
        k=spec.k,
        ideal_grades=ideal,
        ideal_offsets=ideal_offsets,
        gain=spec.gain,
        discount=spec.discount,
        ideal_depth=spec.ideal_depth,
        unjudged=spec.unjudged,
    )
    return grades, result


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
            zero_idcg=int(result.idcg[i] == 0.0),
            computed_at=now,
        )
        for i in range(len(grades.query_ids))
    ]


def overall_point(result_list, spec, *, as_of) -> MetricPoint | None:
    """The mean over the latest per-query points as of ``as_of`` (None if there are none)."""
    latest = (
        MetricPoint.objects.filter(
            result_list=result_list, metric=spec.name, query__isnull=False, as_of__lte=as_of
        )
        .order_by("query_id", "-as_of")
        .distinct("query_id")
        .values("id")
    )
    # The mean is summed exactly (math.fsum, in query order) rather than with SQL's
    # AVG, whose floating-point result depends on the order rows are scanned in:
    # a rebuild must reproduce the stored value to the last bit.
    values = MetricPoint.objects.filter(id__in=latest).order_by("query_id")
    totals = MetricPoint.objects.filter(id__in=latest).aggregate(
        judged=Sum("judged"),
        retrieved=Sum("retrieved"),
        judgements=Sum("judgements"),
        queries=Count("id"),
        zero_idcg=Sum("zero_idcg"),
    )
    if not totals["queries"]:
        return None
    totals["value"] = math.fsum(values.values_list("value", flat=True)) / totals["queries"]
    return MetricPoint(
        result_list=result_list,
        query=None,
        metric=spec.name,
        as_of=as_of,
        computed_at=timezone.now(),
        **totals,
    )


def metric_points_store(points: list[MetricPoint]) -> None:
    """Insert or replace points on (result list, query, metric, as_of): re-runs are idempotent."""
    MetricPoint.objects.bulk_create(
        points,
        update_conflicts=True,
        unique_fields=["result_list", "query", "metric", "as_of"],
        update_fields=POINT_FIELDS,
        batch_size=5000,
    )


def queries_mark_stale(*, query_ids) -> None:
    """Mark queries whose judgements changed; one row per query however many grades arrive."""
    StaleQuery.objects.bulk_create(
        [StaleQuery(query_id=query_id) for query_id in query_ids], ignore_conflicts=True
    )


@transaction.atomic
def metrics_refresh(*, project: Project, now: dt.datetime | None = None) -> int:
    """Recompute the stored series for stale queries, at the current hour's bucket.

    Result lists with no point yet are computed whole. Stale marks are taken with
    SKIP LOCKED so concurrent workers split the work instead of repeating it.
    Returns the number of per-query points written.
    """
    as_of = buckets.bucket_end(now or timezone.now(), "hour")
    marks = StaleQuery.objects.select_for_update(skip_locked=True).filter(query__project=project)
    stale = set(marks.values_list("query_id", flat=True))
    StaleQuery.objects.filter(query_id__in=stale).delete()
    written = 0
    for spec in stored_specs(project):
        computed = set(
            MetricPoint.objects.filter(result_list__project=project, metric=spec.name)
            .values_list("result_list_id", flat=True)
            .distinct()
        )
        for result_list in project.result_lists.all():
            only = None if result_list.pk not in computed else stale
            if only is not None and not only:
                continue
            points = metric_points_build(result_list, spec, as_of=as_of, only=only)
            written += len(points)
            _store_with_overall(result_list, spec, points, as_of=as_of)
    return written


def metrics_rebuild(*, project: Project, since, until=None, every="day", progress=None) -> int:
    """Rebuild the stored series from the judgement log as of each bucket end.

    Judgements after a bucket's end are ignored for it; result lists count from
    their capture time. Each bucket commits on its own, and re-running replaces
    the same rows, so an interrupted rebuild can simply be run again.
    """
    ends = buckets.bucket_ends(since, until or timezone.now(), every)
    written = 0
    for done, as_of in enumerate(ends, start=1):
        with transaction.atomic():
            written += _rebuild_bucket(project, as_of)
        if progress:
            progress(done, len(ends), as_of)
    return written


def _rebuild_bucket(project: Project, as_of: dt.datetime) -> int:
    written = 0
    result_lists = list(project.result_lists.filter(captured_at__lte=as_of))
    for spec in stored_specs(project):
        pairs = selectors.pair_grades(project.pk, as_of=as_of, policy=spec.consensus)
        for result_list in result_lists:
            points = metric_points_build(result_list, spec, as_of=as_of, pairs=pairs)
            _store_with_overall(result_list, spec, points, as_of=as_of)
            written += len(points)
    return written


def _store_with_overall(result_list, spec, points, *, as_of) -> None:
    metric_points_store(points)
    overall = overall_point(result_list, spec, as_of=as_of)
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
