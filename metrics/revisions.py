"""Relevance drift: where raters revised their answers, when and how.

A revision is an event with which a rater replaces their standing answer on a pair
(a grade, or "can't tell") with a different one: grade 2 then grade 1, or grade 3
then "can't tell". A rater's first answer is not a revision, nor is repeating the
same answer, nor an answer after a retraction (the pair had no standing answer).
An undo that brings back an earlier, different answer is one: the current grade
changed.

A query's revisions are read from its events in the log (one index range). The
project's revisions per week would read every event of the project, so they are
counted per query and UTC hour into ``RevisionCount``, recounted for the stale
queries by every refresh (``revisions_recount``); a reader takes whole hours from
there and the rest (the hour of the moment asked for, and the queries still marked
stale) from the log.
"""

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from metrics.models import StaleQuery

# Each event with the rater's event on the pair just before it: the window reads the
# pair's events in the order of judgement_latest_idx (newest first), so lead() is the
# event before.
EVENTS_SQL = """
SELECT j.id, j.created_at, j.query_id, j.document_id, j.rater_id, j.kind, j.grade, j.note,
       lead(j.kind) OVER pair AS before_kind, lead(j.grade) OVER pair AS before_grade
FROM judgements_judgement j
WHERE {scope} AND j.created_at <= %(as_of)s AND j.source <> 'machine'
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
FROM ({EVENTS_SQL.format(scope="j.query_id = %(query)s")}) revision
JOIN judgements_document document ON document.id = revision.document_id
JOIN auth_user rater ON rater.id = revision.rater_id
WHERE {REVISED}
ORDER BY revision.created_at DESC, revision.id DESC
"""

# Revisions per query and UTC hour among the events of the given queries up to %(as_of)s.
HOURLY_SQL = f"""
SELECT revision.query_id, date_trunc('hour', revision.created_at, 'UTC') AS hour, count(*)
FROM ({EVENTS_SQL.format(scope="j.query_id = ANY(%(queries)s)")}) revision
WHERE {REVISED}
GROUP BY revision.query_id, hour
"""
RECOUNT_SQL = f"""
DELETE FROM metrics_revisioncount WHERE query_id = ANY(%(queries)s);
INSERT INTO metrics_revisioncount (query_id, hour, revisions) {HOURLY_SQL};
"""

# Whole hours before %(start)s from the counts, leaving out the queries marked stale.
COUNTED_SQL = """
SELECT counted.hour, sum(counted.revisions)
FROM metrics_revisioncount counted
JOIN judgements_query query ON query.id = counted.query_id
WHERE query.project_id = %(project)s AND counted.hour < %(start)s
  AND NOT (counted.query_id = ANY(%(stale)s))
GROUP BY counted.hour
"""
# The project's revisions among its events from %(start)s to %(as_of)s (the queries
# marked stale left out): each event looks up the event before it, an index descent.
RECENT_SQL = f"""
SELECT count(*)
FROM judgements_judgement j
JOIN judgements_query query ON query.id = j.query_id
CROSS JOIN LATERAL (
    SELECT earlier.kind AS before_kind, earlier.grade AS before_grade
    FROM judgements_judgement earlier
    WHERE earlier.query_id = j.query_id AND earlier.document_id = j.document_id
      AND earlier.rater_id = j.rater_id
      AND (earlier.created_at, earlier.id) < (j.created_at, j.id)
    ORDER BY earlier.created_at DESC, earlier.id DESC
    LIMIT 1
) before
WHERE query.project_id = %(project)s AND j.created_at >= %(start)s
  AND j.created_at <= %(as_of)s AND NOT (j.query_id = ANY(%(stale)s))
  AND j.source <> 'machine'
  AND {REVISED}
"""
# The log's answer for a whole project, to check the counts against.
PROJECT_HOURLY_SQL = HOURLY_SQL.replace(
    "j.query_id = ANY(%(queries)s)",
    "j.query_id IN (SELECT id FROM judgements_query WHERE project_id = %(project)s)",
)


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


def revisions_recount(*, query_ids) -> None:
    """Count again the revisions of ``query_ids`` per UTC hour, from their whole log."""
    ids = sorted(query_ids)
    if ids:
        with connection.cursor() as cursor:
            cursor.execute(RECOUNT_SQL, {"queries": ids, "as_of": "infinity"})


def revisions_per_week(project_id: int, *, as_of: dt.datetime | None) -> list[tuple]:
    """(Monday of the UTC week, revisions) for every week with a revision up to
    ``as_of`` (now if None), oldest first.

    Whole hours before the moment's come from ``RevisionCount``; the moment's own
    hour, and every hour of the queries whose counts are stale, from the log.
    """
    moment = as_of or timezone.now()
    start = moment.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    marked = StaleQuery.objects.filter(project_id=project_id)
    stale = list(marked.values_list("pk", flat=True))
    params = {"project": project_id, "start": start, "as_of": moment, "stale": stale}
    params["queries"] = stale
    with connection.cursor() as cursor:
        cursor.execute(COUNTED_SQL, params)
        rows = cursor.fetchall()
        cursor.execute(RECENT_SQL, params)
        rows.append((start, cursor.fetchone()[0]))
        if stale:
            cursor.execute(HOURLY_SQL, params)
            rows += [(hour, count) for _, hour, count in cursor.fetchall()]
    return _weekly(rows)


def project_revisions_per_week(project_id: int, *, as_of: dt.datetime | None) -> list[tuple]:
    """``revisions_per_week`` straight from the log, reading every event of the project:
    what the counts must add up to."""
    params = {"project": project_id, "as_of": as_of or timezone.now()}
    with connection.cursor() as cursor:
        cursor.execute(PROJECT_HOURLY_SQL, params)
        return _weekly([(hour, count) for _, hour, count in cursor.fetchall()])


def _weekly(hours) -> list[tuple]:
    """(UTC hour, revisions) rows summed per week (from Monday), weeks without any left out."""
    weeks: dict[dt.date, int] = {}
    for hour, count in hours:
        day = hour.astimezone(dt.UTC).date()
        week = day - dt.timedelta(days=day.weekday())
        weeks[week] = weeks.get(week, 0) + int(count)
    return sorted((week, count) for week, count in weeks.items() if count)
