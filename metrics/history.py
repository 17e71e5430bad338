"""The stored series rebuilt from the judgement log, bucket by bucket, and series
replayed on request for moments the stored series does not hold."""

import datetime as dt

import numpy as np
from django.db import transaction
from django.utils import timezone

from judgements.models import Judgement, Project
from metrics import buckets, log_replay, revisions
from metrics.core import query_mean
from metrics.evaluate import (
    ndcg_of,
    overall_intervals,
    overall_of,
    overall_point,
    point_columns,
    read_depth,
    unreturned_count,
)
from metrics.models import LatestMetricPoint, MetricPoint
from metrics.refresh import metric_points_store
from metrics.registry import MetricSpec, stored_specs


def metrics_rebuild(*, project: Project, since, until=None, every="day", progress=None) -> int:
    """Rebuild the stored series from the judgement log as of each bucket end, then
    recount the project's revisions (``metrics.revisions``).

    Judgements after a bucket's end are ignored for it; result lists count from
    their capture time. Each bucket commits on its own, and re-running replaces
    the same rows, so an interrupted rebuild can simply be run again. The log and
    the hits are read once for every bucket (``metrics.log_replay``).
    """
    ends = buckets.bucket_ends(since, until or timezone.now(), every)
    if not ends:
        return 0
    log = log_replay.ProjectReplay(project.pk, until=ends[-1])
    written = 0
    for done, as_of in enumerate(ends, start=1):
        with transaction.atomic():
            written += _rebuild_bucket(project, as_of, log)
        if progress:
            progress(done, len(ends), as_of)
    with transaction.atomic():
        revisions.revisions_recount(query_ids=project.queries.values_list("pk", flat=True))
    return written


def _rebuild_bucket(project: Project, as_of: dt.datetime, log: log_replay.ProjectReplay) -> int:
    written = 0
    result_lists = list(project.result_lists.filter(captured_at__lte=as_of))
    for spec in stored_specs(project):
        pairs = log.pair_grades(as_of, spec.consensus)
        judged_queries = np.unique(pairs.query_ids)
        built = {}
        for result_list in result_lists:
            columns = _rebuilt_columns(log, result_list, spec, pairs)
            log_replay.points_upsert(
                result_list_id=result_list.pk, metric=spec.name, as_of=as_of, columns=columns
            )
            built[result_list] = columns
            written += len(columns["query_id"])
        _rebuilt_overalls_store(spec, built, as_of=as_of, judged_queries=judged_queries)
    return written


# At most this many moments in a series replayed on request (about two months of days).
REPLAYED_MOMENTS = 60


def replayed_series(
    project: Project,
    spec: MetricSpec,
    *,
    grades,
    until: dt.datetime,
    since: dt.datetime | None = None,
    result_lists=None,
    query=None,
) -> list[MetricPoint]:
    """Unsaved points of ``spec`` at each day's end, from the first event of ``grades``'
    raters (or ``since``) up to ``until`` (which ends the last day), computed from the
    log exactly as ``metrics_rebuild`` computes the stored series, and never stored: the
    over-time series of other grades than the human raters' (machine judges', or both),
    which no table keeps. Overall points of ``result_lists`` (every list of the project
    when None), or ``query``'s per-query points when given; oldest first per list. More
    than ``REPLAYED_MOMENTS`` days are thinned evenly, the newest kept; the log is read
    once (``metrics.log_replay``)."""
    events = Judgement.objects.for_project(project).of_grades(grades).filter(created_at__lte=until)
    first = events.order_by("created_at").values_list("created_at", flat=True).first()
    if first is None:
        return []
    ends = sorted({min(end, until) for end in buckets.bucket_ends(first, until, "day")})
    ends = [end for end in ends if since is None or end >= since]
    if len(ends) > REPLAYED_MOMENTS:
        keep = np.unique(np.linspace(len(ends) - 1, 0, REPLAYED_MOMENTS).round().astype(int))
        ends = [ends[i] for i in keep]
    if result_lists is None:
        result_lists = project.result_lists.all()
    lists = sorted(result_lists, key=lambda result_list: (result_list.captured_at, result_list.pk))
    log = log_replay.ProjectReplay(project.pk, until=until, grades=grades)
    points: dict[int, list[MetricPoint]] = {result_list.pk: [] for result_list in lists}
    for as_of in ends:
        pairs = log.pair_grades(as_of, spec.consensus)
        judged_queries = np.unique(pairs.query_ids)
        for result_list in lists:
            if result_list.captured_at > as_of:
                continue
            columns = _rebuilt_columns(log, result_list, spec, pairs)
            if query is not None:
                points[result_list.pk] += _query_points(result_list, spec, query, columns, as_of)
            elif len(columns["query_id"]):
                unreturned = 0
                if spec.mean_over == "all":
                    unreturned = unreturned_count(judged_queries, columns["query_id"])
                points[result_list.pk].append(
                    overall_of(
                        result_list, spec, as_of=as_of, columns=columns, unreturned=unreturned
                    )
                )
    return [point for result_list in lists for point in points[result_list.pk]]


def _query_points(result_list, spec, query, columns, as_of) -> list[MetricPoint]:
    """The point of ``query`` among a list's replayed columns (none if it has no hit)."""
    [found] = np.flatnonzero(columns["query_id"] == query.pk)[:1].tolist() or [None]
    if found is None:
        return []
    return [
        MetricPoint(
            result_list=result_list,
            query=query,
            metric=spec.name,
            as_of=as_of,
            queries=1,
            computed_at=timezone.now(),
            **{
                name: columns[name][found].item()
                for name in ("value", "dcg", "idcg", "judged", "retrieved", "judgements")
            },
            zero_idcg=int(columns["zero_idcg"][found]),
        )
    ]


def _rebuilt_columns(log, result_list, spec, pairs) -> dict[str, np.ndarray]:
    """What ``metric_points_build`` computes, as one array per stored column."""
    grades = log.result_list_grades(result_list.pk, pairs, depth=read_depth(spec))
    return point_columns(grades, ndcg_of(grades, spec))


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
            overall = overall_of(
                result_list,
                spec,
                as_of=as_of,
                columns=columns,
                unreturned=unreturned,
                interval=interval,
            )
            metric_points_store([overall])
