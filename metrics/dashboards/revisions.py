"""Relevance drift: where raters revised their answers, when and how.

A revision is an event with which a rater replaces their standing answer on a pair
(a grade, or "can't tell") with a different one: grade 2 then grade 1, or grade 3
then "can't tell". A rater's first answer is not a revision, nor is repeating the
same answer, nor an answer after a retraction (the pair had no standing answer).
An undo that brings back an earlier, different answer is one: the current grade
changed. Nothing is stored: the judgement log says it all, read as of any moment.
"""

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

# Each event with the rater's event on the pair just before it: the window reads the
# pair's events in the order of judgement_latest_idx (newest first), so lead() is the
# event before.
EVENTS_SQL = """
SELECT j.id, j.created_at, j.query_id, j.document_id, j.rater_id, j.kind, j.grade, j.note,
       lead(j.kind) OVER pair AS before_kind, lead(j.grade) OVER pair AS before_grade
FROM judgements_judgement j
{join}
WHERE {scope} AND j.created_at <= %(as_of)s
WINDOW pair AS (PARTITION BY j.query_id, j.document_id, j.rater_id
                ORDER BY j.created_at DESC, j.id DESC)
"""
REVISED = """
before_kind IN ('grade', 'cant_tell') AND kind IN ('grade', 'cant_tell')
AND (kind, grade) IS DISTINCT FROM (before_kind, before_grade)
"""

QUERY_REVISIONS_SQL = f"""
SELECT revision.created_at, document.external_id, document.title, rater.username,
       revision.before_kind, revision.before_grade, revision.kind, revision.grade,
       revision.note
FROM ({EVENTS_SQL.format(join="", scope="j.query_id = %(query)s")}) revision
JOIN judgements_document document ON document.id = revision.document_id
JOIN auth_user rater ON rater.id = revision.rater_id
WHERE {REVISED}
ORDER BY revision.created_at DESC, revision.id DESC
"""

# Weeks start on Monday, UTC (ISO 8601), whatever the session's time zone.
WEEKLY_REVISIONS_SQL = f"""
SELECT (date_trunc('week', revision.created_at AT TIME ZONE 'UTC'))::date AS week,
       count(*), count(DISTINCT (revision.query_id, revision.document_id))
FROM ({
    EVENTS_SQL.format(
        join="JOIN judgements_query q ON q.id = j.query_id", scope="q.project_id = %(project)s"
    )
}) revision
WHERE {REVISED}
GROUP BY week
ORDER BY week
"""


@dataclass(frozen=True)
class Revision:
    """One rater's changed answer on one pair of a query: when, who, from what to what."""

    created_at: dt.datetime
    document_id: str
    document_title: str
    rater: str
    before: int | None
    after: int | None
    note: str

    @property
    def direction(self) -> str:
        """ "up", "down" or "" (to or from can't tell)."""
        if self.before is None or self.after is None:
            return ""
        return "up" if self.after > self.before else "down"


def query_revisions(query_id: int, *, as_of: dt.datetime | None) -> list[Revision]:
    """The query's revisions up to ``as_of`` (now if None), newest first; ``before`` and
    ``after`` are grades, None for "can't tell"."""
    params = {"query": query_id, "as_of": as_of or timezone.now()}
    with connection.cursor() as cursor:
        cursor.execute(QUERY_REVISIONS_SQL, params)
        rows = cursor.fetchall()
    return [
        Revision(
            created_at=created_at,
            document_id=external_id,
            document_title=title,
            rater=rater,
            before=before_grade if before_kind == "grade" else None,
            after=grade if kind == "grade" else None,
            note=note,
        )
        for (
            created_at,
            external_id,
            title,
            rater,
            before_kind,
            before_grade,
            kind,
            grade,
            note,
        ) in rows
    ]


def revisions_per_week(project_id: int, *, as_of: dt.datetime | None) -> list[tuple]:
    """(Monday of the UTC week, revisions, pairs revised) for every week with a revision
    up to ``as_of`` (now if None), oldest first."""
    params = {"project": project_id, "as_of": as_of or timezone.now()}
    with connection.cursor() as cursor:
        cursor.execute(WEEKLY_REVISIONS_SQL, params)
        return cursor.fetchall()
