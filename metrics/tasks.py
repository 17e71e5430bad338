from django.tasks import task

from judgements.models import Project
from metrics.refresh import metrics_refresh


@task()
def project_metrics_refresh(project_id: int) -> int:
    """Recompute the stale part of a project's stored metrics (see metrics_refresh)."""
    project = Project.objects.filter(pk=project_id).first()
    return metrics_refresh(project=project) if project else 0
