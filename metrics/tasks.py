from django.tasks import task

from judgements.models import Project
from judgements.packed import packed_fill
from metrics.refresh import metrics_refresh


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
