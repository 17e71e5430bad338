"""The rating queue: who may rate what, which pair a rater sees next, and progress.

The pool itself (every pair in the top ``pool_depth`` hits of any result list, with its
count of current grades) is kept in ``QueuePair`` by the triggers of
judgements/sql/queue.sql, so the next pair is one scan of a partial index in queue
order, and the progress bar reads the tallies the same triggers keep
(``QueuePoolTally``, ``QueueRaterTally``). Leases (``QueueLease``) hold a slot for a
few minutes, so that two raters asking at once are not handed the same last open slot.

One module per workflow, everything importable from here as before: ``access`` (who may
rate), ``picking`` (next pair, leases, skips), ``slots`` (room for an answer, waiting),
``progress`` (the rating page and progress counts), ``bulk`` (the bulk grading page)
and ``requests`` (analysts asking for more grades).
"""

from judgements.queue.access import (
    may_rate,
    pair_is_rateable,
    rateable_project,
    rateable_projects,
)
from judgements.queue.bulk import BulkRow, bulk_pairs, query_neighbours
from judgements.queue.picking import (
    LEASE_DURATION,
    lease_release,
    queue_next_pair,
    queue_restore_pair,
    queue_skip_pair,
)
from judgements.queue.progress import (
    PoolSummary,
    Progress,
    RaterProgress,
    RatingPage,
    pool_summary,
    project_rater_progress,
    rater_progress,
    rating_page,
)
from judgements.queue.requests import GradeRequestResult, queue_request_grades
from judgements.queue.slots import QueueWait, pair_has_room, queue_wait

__all__ = [
    "LEASE_DURATION",
    "BulkRow",
    "GradeRequestResult",
    "PoolSummary",
    "Progress",
    "QueueWait",
    "RaterProgress",
    "RatingPage",
    "bulk_pairs",
    "lease_release",
    "may_rate",
    "pair_has_room",
    "pair_is_rateable",
    "pool_summary",
    "project_rater_progress",
    "query_neighbours",
    "queue_next_pair",
    "queue_request_grades",
    "queue_restore_pair",
    "queue_skip_pair",
    "queue_wait",
    "rateable_project",
    "rateable_projects",
    "rater_progress",
    "rating_page",
]
