"""The rating queue: who may rate what, which pair a rater sees next, and progress.

The pool itself (every pair in the top ``pool_depth`` hits of any result list, with its
count of current grades) is kept in ``QueuePair`` by the triggers of migration 0004, so
the next pair is one scan of a partial index in queue order, and the progress bar reads
the tallies the same triggers keep (``QueuePoolTally``, ``QueueRaterTally``). Leases
(``QueueLease``) hold a slot for a few minutes, so that two raters asking at once are
not handed the same last open slot.
"""

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from judgements.models import (
    Document,
    Project,
    Query,
    QueueLease,
    QueuePair,
    QueueRequest,
    QueueSkip,
)
from judgements.querysets import HUMAN_EVENT_SQL
from judgements.roles import Role, can_rate, roles_of

LEASE_DURATION = dt.timedelta(minutes=10)


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
OPEN_PAIR_SQL = """
SELECT pair.id
FROM {source}
WHERE pair.needed > 0
  AND pair.id <> ALL (%(passed)s::bigint[])
  AND NOT jsonb_exists(pair.answered, %(rater)s::text)
  AND pair.needed > (
      SELECT count(*) FROM judgements_queuelease lease
      WHERE lease.query_id = pair.query_id AND lease.document_id = pair.document_id
        AND lease.rater_id <> %(rater)s AND lease.expires_at > now())
  AND {which}
ORDER BY {order}
LIMIT 1
FOR UPDATE OF pair SKIP LOCKED
"""
# The queue itself: one scan of queue_pair_open_idx, in its order, up to the first
# match; a pair the rater skipped is passed over (one probe of queue_skip_pair_idx).
NEXT_PAIR_SQL = OPEN_PAIR_SQL.format(
    source="judgements_queuepair pair",
    which="""pair.project_id = %(project)s
  AND NOT EXISTS (
      SELECT FROM judgements_queueskip skip
      WHERE skip.query_id = pair.query_id AND skip.document_id = pair.document_id
        AND skip.rater_id = %(rater)s)""",
    order="pair.best_rank, pair.grades, pair.query_id, pair.document_id",
)
# The back of the queue, read only once the queue is empty: the pairs the rater skipped,
# the one skipped longest ago first (a pair skipped again goes to the back).
SKIPPED_PAIR_SQL = OPEN_PAIR_SQL.format(
    source="""(
    SELECT skip.query_id, skip.document_id, max(skip.skipped_at) AS skipped_at
    FROM judgements_queueskip skip
    WHERE skip.rater_id = %(rater)s AND skip.project_id = %(project)s
    GROUP BY skip.query_id, skip.document_id
) skipped
JOIN judgements_queuepair pair
    ON pair.query_id = skipped.query_id AND pair.document_id = skipped.document_id""",
    which="true",
    order="skipped.skipped_at, pair.id",
)

LEASE_SQL = """
WITH leased AS (
    -- A slot on the pair, if one is still open once other raters' live leases count.
    INSERT INTO judgements_queuelease (query_id, document_id, rater_id, expires_at)
    SELECT pair.query_id, pair.document_id, %(rater)s, now() + %(duration)s
    FROM judgements_queuepair pair
    WHERE pair.id = %(pair)s
      AND pair.needed > (
          SELECT count(*) FROM judgements_queuelease lease
          WHERE lease.query_id = pair.query_id AND lease.document_id = pair.document_id
            AND lease.rater_id <> %(rater)s AND lease.expires_at > now())
    ON CONFLICT (query_id, document_id, rater_id)
    DO UPDATE SET expires_at = EXCLUDED.expires_at
    RETURNING id, expires_at
),
released AS (
    -- A rater works on one pair at a time: handed this one, they hold no other, in
    -- this project or another (a second tab), so no pair waits for them in vain.
    DELETE FROM judgements_queuelease lease
    WHERE lease.rater_id = %(rater)s
      AND EXISTS (SELECT FROM leased)
      AND lease.id NOT IN (SELECT id FROM leased)
)
SELECT expires_at FROM leased
"""


@transaction.atomic
def queue_next_pair(*, rater, project: Project) -> QueuePair | None:
    """Lease the next pair ``rater`` should grade in ``project``; None when none is left.

    Pairs the rater skipped (``queue_skip_pair``) are offered again, the one skipped
    longest ago first, once no other pair is left. The rater's leases on other pairs
    are released, so a rater holds one slot at a time. The pair's ``lease_expires_at``
    says when its lease ends and names it for ``lease_release``.
    """
    # A lease fails only when other raters' leases, committed after the pick's snapshot
    # and before its lock, took the pair's last slot. The next candidate is then tried,
    # for as long as there is one: each miss is another rater's lease, so the tries end,
    # and a fixed number of them told raters the queue was empty (20 raters asking at
    # once on 3,000 open pairs missed five times in a row) while pairs were open.
    passed: list[int] = []
    while (pair_id := _lock_next_open_pair(rater, project, passed)) is not None:
        expires_at = _lease(pair_id, rater)
        if expires_at is not None:
            return _pair_with_query_and_document(pair_id, expires_at)
        passed.append(pair_id)
    QueueLease.objects.filter(rater=rater, query__project=project).delete()
    return None


@transaction.atomic
def queue_restore_pair(*, rater, project: Project, query_id: int, document_id: int):
    """Lease one given pair to ``rater`` (the pair an undo gave back), or None.

    The pair is handed over while it has a slot open for the rater, or while the rater
    has an answer on it (answering again revises that answer, it takes no slot).
    """
    pair = (
        QueuePair.objects.select_for_update(of=("self",))
        .filter(project=project, query_id=query_id, document_id=document_id)
        .first()
    )
    if pair is None:
        return None
    expires_at = _lease(pair.pk, rater)
    if expires_at is None and str(rater.pk) not in pair.answered:
        return None
    return _pair_with_query_and_document(pair.pk, expires_at)


def _columns(model, alias: str) -> str:
    return ", ".join(f"{alias}.{field.column}" for field in model._meta.concrete_fields)


# The leased pair with its query and document, read the way select_related() would,
# but without building the ORM query again on every pick.
PAIR_SQL = f"""
SELECT {_columns(QueuePair, "pair")}, {_columns(Query, "query")}, {_columns(Document, "document")}
FROM judgements_queuepair pair
JOIN judgements_query query ON query.id = pair.query_id
JOIN judgements_document document ON document.id = pair.document_id
WHERE pair.id = %s
"""


def _pair_with_query_and_document(pair_id: int, expires_at: dt.datetime | None) -> QueuePair:
    with connection.cursor() as cursor:
        cursor.execute(PAIR_SQL, [pair_id])
        row = cursor.fetchone()
    pair, query, document = _instances(row, QueuePair, Query, Document)
    pair.query, pair.document = query, document
    pair.lease_expires_at = expires_at
    return pair


def _instances(row: Sequence, *models) -> list:
    """Model instances from consecutive slices of ``row``, one per model, as the ORM
    would build them (field converters applied, e.g. JSON decoded)."""
    instances, start = [], 0
    for model in models:
        fields = model._meta.concrete_fields
        values = [
            field.from_db_value(value, None, connection)
            if value is not None and hasattr(field, "from_db_value")
            else value
            for field, value in zip(fields, row[start : start + len(fields)], strict=True)
        ]
        instances.append(model.from_db(connection.alias, [f.attname for f in fields], values))
        start += len(fields)
    return instances


def _lock_next_open_pair(rater, project, passed) -> int | None:
    params = {"project": project.pk, "rater": rater.pk, "passed": passed}
    with connection.cursor() as cursor:
        cursor.execute(NEXT_PAIR_SQL, params)
        row = cursor.fetchone()
        if row is None:
            cursor.execute(SKIPPED_PAIR_SQL, params)
            row = cursor.fetchone()
    return row[0] if row else None


def _lease(pair_id: int, rater) -> dt.datetime | None:
    """Lease a slot on the locked pair if one is still open; return when it ends.

    The check runs as a new statement after the pair's lock is held, so under READ
    COMMITTED it sees the lease of any rater who held the lock before.
    """
    params = {"pair": pair_id, "rater": rater.pk, "duration": LEASE_DURATION}
    with connection.cursor() as cursor:
        cursor.execute(LEASE_SQL, params)
        row = cursor.fetchone()
    return row[0] if row else None


def lease_release(
    *, rater, query_id: int, document_id: int, expires_at: dt.datetime | None = None
) -> None:
    """Give the rater's slot on a pair back, after they answered, skipped or left it.

    With ``expires_at`` only that lease goes: a page that is left says which lease it
    was shown, and a newer lease on the same pair (the page loaded again) stays.
    """
    leases = QueueLease.objects.filter(rater=rater, query_id=query_id, document_id=document_id)
    if expires_at is not None:
        leases = leases.filter(expires_at=expires_at)
    leases.delete()


@transaction.atomic
def queue_skip_pair(*, rater, project: Project, query_id: int, document_id: int) -> bool:
    """Put a pair to the back of the rater's queue ("judge later") and release its lease.

    Raises ``ValidationError`` (nothing written) when the pair is not in the project's
    pool. Returns False, recording nothing, when the rater has answered the pair: moving
    on from an answered pair is no skip.
    """
    pair = QueuePair.objects.filter(
        project=project, query_id=query_id, document_id=document_id
    ).first()
    if pair is None:
        raise ValidationError(f"That pair is not in the pool of {project.name}.")
    lease_release(rater=rater, query_id=query_id, document_id=document_id)
    if str(rater.pk) in pair.answered:
        return False
    QueueSkip.objects.create(
        project=project, query_id=query_id, document_id=document_id, rater=rater
    )
    return True


@dataclass(frozen=True)
class QueueWait:
    """Open pairs the rater has not answered that other raters' leases hold."""

    held: int
    until: dt.datetime | None  # When the first of their leases ends.

    @property
    def minutes(self) -> int:
        """Whole minutes, rounded up, until the first held pair comes back."""
        if self.until is None:
            return 0
        seconds = (self.until - timezone.now()).total_seconds()
        return max(1, math.ceil(seconds / 60))


# It starts from the live leases, one at most per rater at work, not from the open pairs:
# a rater at the end of a queue of 30,000 open pairs waited a second for the scan.
QUEUE_WAIT_SQL = """
SELECT count(*), min(held.until)
FROM (
    SELECT lease.query_id, lease.document_id,
           count(*) AS leases, min(lease.expires_at) AS until
    FROM judgements_queuelease lease
    WHERE lease.rater_id <> %(rater)s AND lease.expires_at > now()
    GROUP BY lease.query_id, lease.document_id
) held
JOIN judgements_queuepair pair
    ON pair.query_id = held.query_id AND pair.document_id = held.document_id
WHERE pair.project_id = %(project)s AND pair.needed > 0
  AND NOT jsonb_exists(pair.answered, %(rater)s::text)
  AND held.leases >= pair.needed
"""


def queue_wait(*, rater, project: Project) -> QueueWait:
    """What keeps an empty queue empty for ``rater``: pairs others hold, and until when."""
    with connection.cursor() as cursor:
        cursor.execute(QUEUE_WAIT_SQL, {"rater": rater.pk, "project": project.pk})
        held, until = cursor.fetchone()
    return QueueWait(held=held, until=until)


# A pool pair's row lock, taken before its room is read (see pair_has_room).
POOL_PAIR_LOCK_SQL = """
SELECT pair.id FROM judgements_queuepair pair
WHERE pair.query_id = %(query)s AND pair.document_id = %(document)s
FOR UPDATE OF pair
"""
# The queue's rule for one pool pair, once its row is locked: slots still open once
# other raters' live leases are counted, and whether the rater already answered it.
POOL_PAIR_ROOM_SQL = """
SELECT pair.needed - (
           SELECT count(*) FROM judgements_queuelease lease
           WHERE lease.query_id = pair.query_id AND lease.document_id = pair.document_id
             AND lease.rater_id <> %(rater)s AND lease.expires_at > now()),
       jsonb_exists(pair.answered, %(rater)s::text)
FROM judgements_queuepair pair
WHERE pair.id = %(pair)s
"""
# A pair ranked below the pool: its hits' rows serialise the raters who answer it.
OTHER_PAIR_ROOM_SQL = """
SELECT count(*) FROM (
    SELECT FROM judgements_hit hit
    WHERE hit.query_id = %(query)s AND hit.document_id = %(document)s
    FOR UPDATE OF hit) AS locked
"""
OTHER_PAIR_GRADES_SQL = """
SELECT coalesce((SELECT graded FROM judgements_pairgrade
                 WHERE query_id = %(query)s AND document_id = %(document)s), 0),
       coalesce((SELECT kind <> 'retract' FROM judgements_judgement
                 WHERE rater_id = %(rater)s AND query_id = %(query)s
                   AND document_id = %(document)s
                 ORDER BY created_at DESC, id DESC LIMIT 1), false)
"""


def pair_has_room(*, rater, project: Project, query_id: int, document_id: int) -> bool:
    """Whether ``rater`` may add an answer to the pair, by the queue's rule.

    A rater who already answered the pair may always answer again (a change of mind).
    Otherwise the pair must still be short of its ``judges_per_pair`` grades (or more,
    when an analyst asked for more) once other raters' live leases are counted, as
    when the queue picks a pair. The pair's row stays locked until the transaction
    ends, so that two raters answering at once cannot both take its last slot. Call
    inside the transaction that writes the answer.

    The room is read by a new statement once the lock is held, as ``_lease`` does:
    under READ COMMITTED, a statement that waited for the lock would see the pair's
    new grade count but the leases of its snapshot from before the wait, so the lease
    of a rater whose grade just committed would still hold a slot, and the second
    holder of a pair with two slots was refused its grade.
    """
    params = {"rater": rater.pk, "query": query_id, "document": document_id}
    with connection.cursor() as cursor:
        cursor.execute(POOL_PAIR_LOCK_SQL, params)
        row = cursor.fetchone()
        if row is not None:
            cursor.execute(POOL_PAIR_ROOM_SQL, params | {"pair": row[0]})
            open_slots, answered = cursor.fetchone()
            return answered or open_slots > 0
        cursor.execute(OTHER_PAIR_ROOM_SQL, params)
        cursor.execute(OTHER_PAIR_GRADES_SQL, params)
        graded, answered = cursor.fetchone()
    return answered or graded < project.judges_per_pair


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
SELECT {_columns(Project, "project")},
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
    (project,) = _instances(project_values, Project)
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


@dataclass(frozen=True)
class BulkRow:
    document_id: int
    best_rank: int
    grades: int
    answer: str  # The rater's current answer as an answer choice; "" when none.


BULK_PAIRS_SQL = f"""
WITH ranked AS (
    -- The query's documents down to the chosen depth, at their best rank in any list.
    SELECT hit.document_id, min(hit.rank) AS best_rank
    FROM judgements_hit hit
    WHERE hit.query_id = %(query)s AND hit.rank <= %(depth)s
    GROUP BY hit.document_id
),
newest AS (
    SELECT DISTINCT ON (event.document_id, event.rater_id)
        event.document_id, event.rater_id, event.kind, event.grade
    FROM judgements_judgement event
    WHERE event.query_id = %(query)s AND {HUMAN_EVENT_SQL.format(alias="event")}
    ORDER BY event.document_id, event.rater_id, event.created_at DESC, event.id DESC
)
SELECT ranked.document_id, ranked.best_rank,
       count(newest.kind) FILTER (WHERE newest.kind = 'grade') AS grades,
       max(newest.kind) FILTER (WHERE newest.rater_id = %(rater)s) AS own_kind,
       max(newest.grade) FILTER (WHERE newest.rater_id = %(rater)s) AS own_grade
FROM ranked
LEFT JOIN newest USING (document_id)
GROUP BY ranked.document_id, ranked.best_rank
HAVING NOT %(unjudged)s OR count(newest.kind) FILTER (WHERE newest.kind = 'grade') = 0
ORDER BY ranked.best_rank, ranked.document_id
"""


def bulk_pairs(*, rater, query, depth: int, unjudged: bool) -> list[BulkRow]:
    """The query's pairs down to ``depth`` for the bulk page, best rank first.

    ``unjudged`` keeps only pairs without any current grade.
    """
    params = {"query": query.pk, "depth": depth, "unjudged": unjudged, "rater": rater.pk}
    with connection.cursor() as cursor:
        cursor.execute(BULK_PAIRS_SQL, params)
        rows = cursor.fetchall()
    return [
        BulkRow(document_id, best_rank, grades, _answer_choice(kind, grade))
        for document_id, best_rank, grades, kind, grade in rows
    ]


def _answer_choice(kind: str | None, grade: int | None) -> str:
    if kind == "grade":
        return str(grade)
    return "cant_tell" if kind == "cant_tell" else ""


def query_neighbours(query) -> tuple:
    """The project's queries just before and after ``query`` in text order (or None)."""
    queries = query.project.queries
    before = queries.filter(text__lt=query.text).order_by("-text").first()
    after = queries.filter(text__gt=query.text).order_by("text").first()
    return before, after


@dataclass(frozen=True)
class GradeRequestResult:
    sent: int  # Pairs now open for one more grade.
    waiting: int  # Pairs already sent back and still waiting for that grade.
    unreturned: int  # Pairs no result list returns, which the queue cannot offer.
    unknown: int  # Pairs of another project or without any judgement.

    @property
    def message(self) -> str:
        parts = [f"{self.sent} pair{'s' * (self.sent != 1)} sent back for one more grade"]
        if self.waiting:
            parts.append(f"{self.waiting} already waiting for it")
        if self.unreturned:
            parts.append(f"{self.unreturned} not returned by any result list, so not queued")
        if self.unknown:
            parts.append(f"{self.unknown} not judged in this project")
        return "; ".join(parts) + "."


REQUESTED_PAIRS_SQL = """
SELECT pair.query_id, pair.document_id, pair.graded,
       EXISTS (SELECT FROM judgements_hit hit
               WHERE hit.query_id = pair.query_id AND hit.document_id = pair.document_id),
       coalesce((SELECT max(request.wanted) FROM judgements_queuerequest request
                 WHERE request.query_id = pair.query_id
                   AND request.document_id = pair.document_id), 0)
FROM judgements_pairgrade pair
JOIN unnest(%(queries)s::bigint[], %(documents)s::bigint[]) AS asked (query_id, document_id)
    USING (query_id, document_id)
WHERE pair.project_id = %(project)s
ORDER BY pair.query_id, pair.document_id
FOR UPDATE OF pair
"""


@transaction.atomic
def queue_request_grades(
    *, project: Project, pairs: Sequence[tuple[int, int]], requested_by
) -> GradeRequestResult:
    """Send (query id, document id) ``pairs`` back to the queue for one more grade each.

    Each pair should then have one more current grade than it has now, from a rater who
    has not answered it yet; a pair deeper than the pool depth joins the pool for it.
    Asking again before that grade arrives changes nothing, so a double click is
    harmless. The pairs' grade rows are locked in the triggers' order, so a grade
    arriving meanwhile is either counted before the request or waits for it.
    """
    asked = sorted(set(pairs))
    params = {
        "project": project.pk,
        "queries": [query_id for query_id, _ in asked],
        "documents": [document_id for _, document_id in asked],
    }
    with connection.cursor() as cursor:
        cursor.execute(REQUESTED_PAIRS_SQL, params)
        rows = cursor.fetchall()
    requests = [
        QueueRequest(
            project=project,
            query_id=query_id,
            document_id=document_id,
            wanted=graded + 1,
            requested_by=requested_by,
        )
        for query_id, document_id, graded, returned, wanted in rows
        if returned and wanted < graded + 1
    ]
    QueueRequest.objects.bulk_create(requests, ignore_conflicts=True)
    unreturned = sum(not returned for _, _, _, returned, _ in rows)
    return GradeRequestResult(
        sent=len(requests),
        waiting=len(rows) - len(requests) - unreturned,
        unreturned=unreturned,
        unknown=len(asked) - len(rows),
    )
