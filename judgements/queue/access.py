"""Who may rate which project."""

from django.db.models import Exists, OuterRef

from judgements.models import (
    Project,
)
from judgements.roles import can_rate


def rateable_projects(user):
    """Projects ``user`` may grade: every project for a rater, unless it names its raters."""
    if not can_rate(user):
        return Project.objects.none()
    named = Project.raters.through.objects.filter(project=OuterRef("pk"))
    return Project.objects.filter(~Exists(named) | Exists(named.filter(user=user)))


def may_rate(user, project: Project) -> bool:
    return rateable_projects(user).filter(pk=project.pk).exists()


RATEABLE_PROJECT_SQL = """
SELECT project.* FROM judgements_project project
WHERE project.slug = %(slug)s
  AND (NOT EXISTS (SELECT FROM judgements_project_raters named
                   WHERE named.project_id = project.id)
       OR EXISTS (SELECT FROM judgements_project_raters named
                  WHERE named.project_id = project.id AND named.user_id = %(user)s))
"""


def rateable_project(user, slug: str) -> Project | None:
    """The project ``slug`` if ``user`` may rate it: ``rateable_projects`` for one slug,
    in plain SQL, since the rating page asks on every pair."""
    if not can_rate(user):
        return None
    return next(
        iter(Project.objects.raw(RATEABLE_PROJECT_SQL, {"slug": slug, "user": user.pk})), None
    )


# Pairs still short of raters once other raters' live leases are counted, which this
# rater has not answered (with a grade or can't tell). Rows another transaction holds
# (a claim or a grade of the same pair at this moment) are passed over, not waited for.
