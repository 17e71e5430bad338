"""Whether a pair still has room for a rater's answer, and how long a rater waits for
pairs other raters hold."""

import datetime as dt
import math
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from judgements.models import (
    Project,
)


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
       coalesce((SELECT answer.kind <> 'retract'
                 FROM judgements_current_answers(ARRAY[%(query)s]::bigint[],
                                                 ARRAY[%(document)s]::bigint[]) AS answer
                 WHERE answer.rater_id = %(rater)s), false)
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
