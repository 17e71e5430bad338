from django.db import transaction
from django.tasks import task

from judgements.models import Project, ResultList
from judgements.packed import packed_fill
from metrics.models import MetricPoint
from metrics.overall import overall_store
from metrics.refresh import metrics_refresh, result_list_lock
from metrics.registry import stored_specs


@task()
def project_metrics_refresh(project_id: int) -> int:
    """Recompute the stale part of a project's stored metrics (see metrics_refresh)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return 0
    # The packed rows first, in a transaction of their own that waits for writers of
    # the same queries (the refresh's reads then find them filled and never wait).
    packed_fill(project.pk)
    return metrics_refresh(project=project)


@task()
def result_list_interval(result_list_id: int, metric: str) -> bool:
    """Compute a list's newest overall point of ``metric`` in full, its interval with
    it, if the interval is pending (``MetricPoint.ci_pending``: a grade's refresh
    updated the mean alone, ``metrics.overall``). Returns whether it did.

    Under the list's recompute lock, as a refresh writes the list: the point is that of
    the latest points as committed, which a full recompute reproduces bit for bit.
    """
    result_list = ResultList.objects.select_related("project").filter(pk=result_list_id)
    result_list = result_list.first()
    if result_list is None:
        return False
    specs = {spec.name: spec for spec in stored_specs(result_list.project)}
    if metric not in specs:
        return False
    with transaction.atomic():
        result_list_lock(result_list.pk)
        newest = MetricPoint.objects.filter(result_list=result_list, metric=metric, query=None)
        newest = newest.order_by("-as_of").first()
        if newest is None or not newest.ci_pending:
            return False
        overall_store(result_list, specs[metric], as_of=newest.as_of)
    return True
