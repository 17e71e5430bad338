"""Reads of the search log for the online metrics: plain arrays and numbers, no QuerySets."""

from django.db import connection

from judgements.models import Project
from searchlogs.models import SearchEvent, SearchLogState

DEFAULT_SUCCESS_DWELL = 10.0
Kind = SearchEvent.Kind


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


def query_traffic(project: Project):
    """The traffic kept for the project's queries drawn from the log (searchlogs.sampling):
    query ids (sorted) and their results pages, as float arrays for a weighted mean."""
    import numpy as np

    from searchlogs.models import QueryTraffic

    rows = QueryTraffic.objects.filter(project=project).order_by("query_id")
    pairs = list(rows.values_list("query_id", "impressions"))
    ids = np.array([query for query, _ in pairs], np.int64)
    return ids, np.array([count for _, count in pairs], np.float64)
