"""Which pair a rater sees next: the pick, the lease that holds its slot, skips and
releases."""

import datetime as dt
from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import OperationalError, connection, transaction

from judgements.models import (
    Document,
    Project,
    Query,
    QueueLease,
    QueuePair,
    QueueSkip,
)

LEASE_DURATION = dt.timedelta(minutes=10)
# How long a rater whose pick finds only pairs other transactions hold waits for one
# (a grade holds its pair for milliseconds; a large import holds its pairs until it
# commits, and the rater is then told no pair is free rather than kept waiting).
HELD_PAIR_WAIT = "5s"
LOCK_NOT_AVAILABLE = "55P03"


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
{lock}
"""
# The queue itself: one scan of queue_pair_open_idx, in its order, up to the first
# match; a pair the rater skipped is passed over (one probe of queue_skip_pair_idx).
NEXT_PAIR = {
    "source": "judgements_queuepair pair",
    "which": """pair.project_id = %(project)s
  AND NOT EXISTS (
      SELECT FROM judgements_queueskip skip
      WHERE skip.query_id = pair.query_id AND skip.document_id = pair.document_id
        AND skip.rater_id = %(rater)s)""",
    "order": "pair.best_rank, pair.grades, pair.query_id, pair.document_id",
}
# The back of the queue, read only once the queue is empty: the pairs the rater skipped,
# the one skipped longest ago first (a pair skipped again goes to the back).
SKIPPED_PAIR = {
    "source": """(
    SELECT skip.query_id, skip.document_id, max(skip.skipped_at) AS skipped_at
    FROM judgements_queueskip skip
    WHERE skip.rater_id = %(rater)s AND skip.project_id = %(project)s
    GROUP BY skip.query_id, skip.document_id
) skipped
JOIN judgements_queuepair pair
    ON pair.query_id = skipped.query_id AND pair.document_id = skipped.document_id""",
    "which": "true",
    "order": "skipped.skipped_at, pair.id",
}
# Each, as a pick that locks its pair, passing over pairs another transaction holds
# (a rater being handed it, or a grade of it being written); and as a plain read that
# sees those pairs too, asked only when the pick found nothing.
PICKS = [
    OPEN_PAIR_SQL.format(**part, lock="FOR UPDATE OF pair SKIP LOCKED")
    for part in (NEXT_PAIR, SKIPPED_PAIR)
]
HELD_PICKS = [OPEN_PAIR_SQL.format(**part, lock="") for part in (NEXT_PAIR, SKIPPED_PAIR)]
WAIT_FOR_PAIR_SQL = """
SELECT set_config('lock_timeout', %(wait)s, true);
SELECT id FROM judgements_queuepair WHERE id = %(pair)s FOR UPDATE;
"""

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
    """Lease the next pair ``rater`` should grade in ``project``; None when none is left,
    or when those left stay held by other transactions for ``HELD_PAIR_WAIT``.

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
            return _pair_with_query_and_document(pair_id, expires_at, project)
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
    return _pair_with_query_and_document(pair.pk, expires_at, project)


def model_columns(model, alias: str) -> str:
    return ", ".join(f"{alias}.{field.column}" for field in model._meta.concrete_fields)


# The leased pair with its query and document, read the way select_related() would,
# but without building the ORM query again on every pick.
PAIR_SQL = f"""
SELECT {model_columns(QueuePair, "pair")}, {model_columns(Query, "query")},
       {model_columns(Document, "document")}
FROM judgements_queuepair pair
JOIN judgements_query query ON query.id = pair.query_id
JOIN judgements_document document ON document.id = pair.document_id
WHERE pair.id = %s
"""


def _pair_with_query_and_document(
    pair_id: int, expires_at: dt.datetime | None, project: Project
) -> QueuePair:
    with connection.cursor() as cursor:
        cursor.execute(PAIR_SQL, [pair_id])
        row = cursor.fetchone()
    pair, query, document = model_instances(row, QueuePair, Query, Document)
    pair.project = query.project = document.project = project
    pair.query, pair.document = query, document
    pair.lease_expires_at = expires_at
    return pair


def model_instances(row: Sequence, *models) -> list:
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


def _lock_next_open_pair(rater, project, passed: list[int]) -> int | None:
    """Lock the next open pair for ``rater``, other than ``passed``; None when none is.

    The pick passes over pairs other transactions hold. Only when it finds nothing does
    a plain read look for an open pair among those: the rater then waits for that
    transaction to end and picks again, rather than being told the queue is empty
    while the last open pair's first grade is being written (which left that pair one
    grade short once every rater had been told so). The wait takes the pair's lock in
    a savepoint rolled back at once, so a waiting rater holds no lock another waits
    for (two raters each keeping the pair they had waited for deadlocked). A pair is
    waited for once; should the read find it again, it is passed, so the waits end.
    """
    params = {"project": project.pk, "rater": rater.pk, "passed": passed}
    waited: set[int] = set()
    with connection.cursor() as cursor:
        while True:
            if (pair_id := _first(cursor, PICKS, params)) is not None:
                return pair_id
            if (held_id := _first(cursor, HELD_PICKS, params)) is None:
                return None
            if held_id in waited:
                passed.append(held_id)
                continue
            if not _waited_for(cursor, held_id):
                return None
            waited.add(held_id)


def _waited_for(cursor, pair_id: int) -> bool:
    """Wait until no other transaction holds the pair, or ``HELD_PAIR_WAIT`` passed
    (False); its lock and the timeout end with the savepoint they were taken in."""
    savepoint = transaction.savepoint_create()
    try:
        cursor.execute(WAIT_FOR_PAIR_SQL, {"wait": HELD_PAIR_WAIT, "pair": pair_id})
    except OperationalError as error:
        if getattr(error.__cause__, "pgcode", None) != LOCK_NOT_AVAILABLE:
            raise
        return False
    finally:
        transaction.savepoint_rollback(savepoint)
    return True


def _first(cursor, queries: list[str], params: dict) -> int | None:
    """The pair id the first of ``queries`` to find one finds."""
    for sql in queries:
        cursor.execute(sql, params)
        if (row := cursor.fetchone()) is not None:
            return row[0]
    return None


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
