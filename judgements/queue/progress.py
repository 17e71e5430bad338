"""A rater's progress, the rating page's first read, and the pool's progress per rater."""

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from judgements.models import (
    Project,
)
from judgements.queue.picking import model_columns, model_instances
from judgements.roles import Role, roles_of


@dataclass(frozen=True)
class Progress:
    done: int
    left: int
    today: int

    @property
    def total(self) -> int:
        return self.done + self.left

    @property
    def percent(self) -> int:
        """The share done; 0 while the pool is empty (nothing is done when nothing is to do)."""
        return round(100 * self.done / self.total) if self.total else 0


RATER_PROGRESS_SQL = """
WITH rater AS (
    SELECT answered, answered_open,
           CASE WHEN day = %(today)s THEN answered_on_day ELSE 0 END AS today
    FROM judgements_queueratertally
    WHERE project_id = %(project)s AND rater_id = %(rater)s
)
SELECT
    coalesce((SELECT answered FROM rater), 0) AS done,
    coalesce((SELECT open_pairs FROM judgements_queuepooltally
              WHERE project_id = %(project)s), 0)
    - coalesce((SELECT answered_open FROM rater), 0) AS left,
    coalesce((SELECT today FROM rater), 0) AS today
"""


def rater_progress(*, rater, project: Project) -> Progress:
    """Pool pairs the rater has answered, open pairs left for them, and pool pairs whose
    current answer they gave today (UTC): three reads of the trigger-kept tallies."""
    params = {"rater": rater.pk, "project": project.pk, "today": _today()}
    with connection.cursor() as cursor:
        cursor.execute(RATER_PROGRESS_SQL, params)
        done, left, today = cursor.fetchone()
    return Progress(done=done, left=left, today=today)


def _today() -> dt.date:
    """Today in UTC: daily counts use UTC days throughout."""
    return timezone.now().astimezone(dt.UTC).date()


@dataclass(frozen=True)
class RatingPage:
    """What the rating page needs before it picks a pair, read in one statement."""

    project: Project | None  # None when there is no such project or the user may not rate it.
    roles: set[Role]
    progress: Progress | None


# rateable_project(), the user's roles and rater_progress() at once: the rating page
# is loaded after every answer, and each statement is a round trip to the server. A row
# comes back even for an unknown slug, so that the roles still decide between 403 and 404.
RATING_PAGE_SQL = f"""
SELECT {model_columns(Project, "project")},
    ARRAY(SELECT account_group.name FROM auth_user_groups member
          JOIN auth_group account_group ON account_group.id = member.group_id
          WHERE member.user_id = %(user)s) AS role_names,
    progress.done, progress.left, progress.today
FROM (SELECT 1) AS one
LEFT JOIN judgements_project project
    ON project.slug = %(slug)s
   AND (NOT EXISTS (SELECT FROM judgements_project_raters named
                    WHERE named.project_id = project.id)
        OR EXISTS (SELECT FROM judgements_project_raters named
                   WHERE named.project_id = project.id AND named.user_id = %(user)s))
LEFT JOIN LATERAL ({RATER_PROGRESS_SQL.replace("%(project)s", "project.id")}) AS progress
    ON project.id IS NOT NULL
"""


def rating_page(user, slug: str) -> RatingPage:
    """The project ``slug`` if ``user`` (signed in) may rate it, their roles, and their
    progress in it. The user's role cache is filled, so role checks cost no query."""
    params = {"slug": slug, "user": user.pk, "rater": user.pk, "today": _today()}
    with connection.cursor() as cursor:
        cursor.execute(RATING_PAGE_SQL, params)
        *project_values, role_names, done, left, today = cursor.fetchone()
    if not user.is_superuser:
        user._role_cache = {role for role in Role if role.value in role_names}
    if project_values[0] is None:
        return RatingPage(project=None, roles=roles_of(user), progress=None)
    (project,) = model_instances(project_values, Project)
    progress = Progress(done=done, left=left, today=today)
    return RatingPage(project=project, roles=roles_of(user), progress=progress)


@dataclass(frozen=True)
class RaterProgress:
    username: str
    answered: int
    waiting: int  # Answered pairs still short of other raters' grades.
    today: int
    last_event: dt.datetime | None


@dataclass(frozen=True)
class PoolSummary:
    pairs: int
    complete: int
    open_slots: int


PROJECT_RATERS_SQL = """
SELECT account.username, tally.answered, tally.answered_open,
    CASE WHEN tally.day = %(today)s THEN tally.answered_on_day ELSE 0 END AS today,
    (SELECT event.created_at FROM judgements_judgement event
     JOIN judgements_query query ON query.id = event.query_id
     WHERE event.rater_id = tally.rater_id AND query.project_id = tally.project_id
     ORDER BY event.created_at DESC
     LIMIT 1) AS last_event
FROM judgements_queueratertally tally
JOIN auth_user account ON account.id = tally.rater_id
WHERE tally.project_id = %(project)s
ORDER BY account.username
"""


def project_rater_progress(project: Project) -> list[RaterProgress]:
    """Per rater who answered pool pairs: how many, how many wait for others, activity."""
    params = {"project": project.pk, "today": _today()}
    with connection.cursor() as cursor:
        cursor.execute(PROJECT_RATERS_SQL, params)
        return [RaterProgress(*row) for row in cursor.fetchall()]


def pool_summary(project: Project) -> PoolSummary:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*), count(*) FILTER (WHERE needed <= 0),
                   coalesce(sum(greatest(needed, 0)), 0)
            FROM judgements_queuepair WHERE project_id = %s
            """,
            [project.pk],
        )
        return PoolSummary(*cursor.fetchone())
