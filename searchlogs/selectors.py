"""Reads of the search log for the online metrics: plain arrays and numbers, no QuerySets."""

import numpy as np
from django.db import connection

from config.pgcopy import copy_rows
from judgements.models import Project
from metrics.core.online import SearchEvents
from metrics.core.segments import sorted_lookup
from searchlogs.models import SearchEvent, SearchLogState

DEFAULT_SUCCESS_DWELL = 10.0
Kind = SearchEvent.Kind

# Session, document and event ids become 51-bit hashes (exact in float64 too); a
# collision needs ~10^7 ids to reach even 10^-2 odds within one project, and would
# merge two sessions or two clicks' dwells, not lose events. Dwells are joined to
# their clicks in numpy rather than in SQL: a join's plan depends on table
# statistics, which lag behind a large batch just stored.
_EVENTS_SQL = """
SELECT hashtextextended(session_id, 0) >> 13, extract(epoch FROM at)::float8, kind,
       coalesce(query_id, -1), answered, hashtextextended(document, 0) >> 13,
       hashtextextended(event_id, 0) >> 13
FROM searchlogs_searchevent WHERE project_id = %s AND kind IN (%s, %s)
"""
_DWELLS_SQL = """
SELECT hashtextextended(click_event_id, 0) >> 13,
       CASE WHEN end_of_session THEN 'Infinity'::float8 ELSE dwell_seconds END
FROM searchlogs_searchevent WHERE project_id = %s AND kind = %s
"""


def search_events(project: Project) -> SearchEvents:
    """The project's impressions and clicks, each click with its dwell (the longest
    recorded; ``inf`` for the end-of-session marker, ``nan`` if none)."""
    rows = copy_rows(
        _EVENTS_SQL,
        [project.pk, Kind.IMPRESSION, Kind.CLICK],
        [("session", ">i8"), ("time", ">f8"), ("kind", ">i2"), ("query", ">i8"),
         ("answered", "u1"), ("document", ">i8"), ("event", ">i8")],
    )  # fmt: skip
    dwells = copy_rows(
        _DWELLS_SQL, [project.pk, Kind.DWELL], [("click", ">i8"), ("seconds", ">f8")]
    )
    return SearchEvents(
        session=rows["session"].astype(np.int64),
        time=rows["time"].astype(np.float64),
        kind=rows["kind"].astype(np.int8),
        query=rows["query"].astype(np.int64),
        answered=rows["answered"].astype(bool),
        document=rows["document"].astype(np.int64),
        dwell=_longest_dwell(rows["event"].astype(np.int64), dwells),
    )


def _longest_dwell(events: np.ndarray, dwells: np.ndarray) -> np.ndarray:
    """Per event, the longest dwell recorded for it (nan if none)."""
    if not len(dwells):
        return np.full(len(events), np.nan)
    clicks, seconds = dwells["click"].astype(np.int64), dwells["seconds"].astype(np.float64)
    order = np.argsort(clicks, kind="stable")
    clicks, seconds = clicks[order], seconds[order]
    starts = np.flatnonzero(np.r_[True, clicks[1:] != clicks[:-1]])
    return sorted_lookup(clicks[starts], np.maximum.reduceat(seconds, starts), events)


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


def log_version(project: Project) -> int:
    """Raised by every batch that stores an event; 0 for a project without a log."""
    state = SearchLogState.objects.filter(project=project).values_list("version", flat=True)
    return next(iter(state), 0)
