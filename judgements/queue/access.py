"""Who may rate which project."""

from django.db import connection
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


# rateable_projects' rule for one project row, in plain SQL for the rating pages and
# the API, which ask on every pair.
RATEABLE = """(NOT EXISTS (SELECT FROM judgements_project_raters named
                   WHERE named.project_id = project.id)
       OR EXISTS (SELECT FROM judgements_project_raters named
                  WHERE named.project_id = project.id AND named.user_id = %(user)s))"""
RATEABLE_PROJECT_SQL = f"""
SELECT project.* FROM judgements_project project
WHERE project.slug = %(slug)s AND {RATEABLE}
"""
# One row when the user may rate the project: whether the pair is one of its hits.
RATEABLE_PAIR_SQL = f"""
SELECT EXISTS (SELECT FROM judgements_hit hit
               WHERE hit.query_id = %(query)s AND hit.document_id = %(document)s)
FROM judgements_project project
WHERE project.id = %(project)s AND {RATEABLE}
"""


def rateable_project(user, slug: str) -> Project | None:
    """The project ``slug`` if ``user`` may rate it: ``rateable_projects`` for one slug,
    in plain SQL, since the rating page asks on every pair."""
    if not can_rate(user):
        return None
    return next(
        iter(Project.objects.raw(RATEABLE_PROJECT_SQL, {"slug": slug, "user": user.pk})), None
    )


def pair_is_rateable(user, project: Project, query_id: int, document_id: int) -> bool | None:
    """None when ``user`` may not rate ``project``; else whether the pair is one of its
    hits (whether the query and document belong to it is the caller's to check)."""
    if not can_rate(user):
        return None
    params = {"user": user.pk, "project": project.pk, "query": query_id, "document": document_id}
    with connection.cursor() as cursor:
        cursor.execute(RATEABLE_PAIR_SQL, params)
        row = cursor.fetchone()
    return None if row is None else row[0]


# Pairs still short of raters once other raters' live leases are counted, which this
# rater has not answered (with a grade or can't tell). Rows another transaction holds
# (a claim or a grade of the same pair at this moment) are passed over, not waited for.
