"""Analysts sending pairs back to the queue for one more grade."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction

from judgements.models import (
    Project,
    QueueRequest,
)


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
