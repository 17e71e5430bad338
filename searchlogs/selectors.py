"""Reads of the search log for the online metrics: plain arrays and numbers, no QuerySets."""

import io

import numpy as np
from django.db import connection

from judgements.models import Project
from metrics.core.online import SearchEvents
from searchlogs.models import SearchEvent

DEFAULT_SUCCESS_DWELL = 10.0
Kind = SearchEvent.Kind

# Session ids and document ids become 51-bit hashes, exact in the float64 columns
# some callers build; a collision needs ~10^7 sessions to reach even 10^-2 odds
# within one project, and would merge two sessions, not lose events.
_EVENTS_SQL = """
SELECT hashtextextended(e.session_id, 0) >> 13, extract(epoch FROM e.at)::float8, e.kind,
       coalesce(e.query_id, -1), e.answered, hashtextextended(e.document, 0) >> 13,
       coalesce(d.dwell, 'NaN'::float8)
FROM searchlogs_searchevent e
LEFT JOIN (
    SELECT click_event_id,
           max(CASE WHEN end_of_session THEN 'Infinity'::float8 ELSE dwell_seconds END) AS dwell
    FROM searchlogs_searchevent WHERE project_id = {project} AND kind = {dwell}
    GROUP BY click_event_id
) d ON e.kind = {click} AND d.click_event_id = e.event_id
WHERE e.project_id = {project} AND e.kind IN ({impression}, {click})
"""
# COPY's binary format: a fixed-size row of (field count, then length and value per
# field), big-endian, since no column above is ever NULL.
_ROW = np.dtype(
    [("fields", ">i2")]
    + [
        item
        for name, kind in (
            ("session", ">i8"),
            ("time", ">f8"),
            ("kind", ">i2"),
            ("query", ">i8"),
            ("answered", "u1"),
            ("document", ">i8"),
            ("dwell", ">f8"),
        )
        for item in ((f"{name}_length", ">i4"), (name, kind))
    ]
)
_HEADER, _TRAILER = 19, 2


def search_events(project: Project) -> SearchEvents:
    """The project's impressions and clicks, each click with its dwell (the longest
    recorded; ``inf`` for the end-of-session marker, ``nan`` if none)."""
    sql = _EVENTS_SQL.format(
        project=int(project.pk),
        impression=Kind.IMPRESSION,
        click=Kind.CLICK,
        dwell=Kind.DWELL,
    )
    buffer = io.BytesIO()
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(f"COPY ({sql}) TO STDOUT WITH (FORMAT binary)", buffer)
    rows = np.frombuffer(buffer.getbuffer()[_HEADER:-_TRAILER], dtype=_ROW)
    return SearchEvents(
        session=rows["session"].astype(np.int64),
        time=rows["time"].astype(np.float64),
        kind=rows["kind"].astype(np.int8),
        query=rows["query"].astype(np.int64),
        answered=rows["answered"].astype(bool),
        document=rows["document"].astype(np.int64),
        dwell=rows["dwell"].astype(np.float64),
    )


def success_dwell_of(project: Project) -> float:
    """The project's success threshold in seconds (10 unless its settings say otherwise)."""
    settings = getattr(project, "search_log_settings", None)
    return settings.success_dwell if settings is not None else DEFAULT_SUCCESS_DWELL


def unmatched_queries(project: Project, *, limit: int = 10) -> tuple[int, list[tuple[str, int]]]:
    """Impressions whose query matched none of the project's, and the most frequent texts."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT query_key, count(*), sum(count(*)) OVER () FROM searchlogs_searchevent"
            " WHERE project_id = %s AND kind = %s AND query_id IS NULL"
            " GROUP BY query_key ORDER BY count(*) DESC, query_key LIMIT %s",
            [project.pk, Kind.IMPRESSION, limit],
        )
        rows = cursor.fetchall()
    return (int(rows[0][2]) if rows else 0), [(text, count) for text, count, _ in rows]
