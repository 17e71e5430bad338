"""A project's stored log written out as UBI 1.3.0: ``ubi_queries`` and ``ubi_events`` NDJSON.

Each results page is a query record (its event id the ``query_id``, its session the
``client_id``, its results the ``query_response_hit_ids``); each click an event of
action ``click`` naming the page it belongs to (the latest page of its session at or
before it, as the online metrics attribute it), with its rank as
``position.ordinal`` (from 1) and its longest dwell as ``event_attributes.dwell_time``.
Read back by searchlogs.ubi, the log gives the same online metrics, with two things
UBI has no field for left out: a page flagged as answering its query, and a dwell's
end-of-session marker. Clicks without a page have no query to name and are counted,
not written.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import orjson
from django.db import connection, transaction

from judgements.models import Project
from searchlogs.models import SearchEvent

APPLICATION = "relevance-judge"
Kind = SearchEvent.Kind

_PAGES_SQL = f"""
SELECT event_id, session_id, at, query_text, documents FROM searchlogs_searchevent
WHERE project_id = %(project)s AND kind = {Kind.IMPRESSION} ORDER BY at, event_id
"""
# Each click with the page it belongs to: pages numbered in each session in the online
# metrics' order (metrics.core.online), a click belonging to the latest.
_CLICKS_SQL = f"""
WITH ordered AS (
    SELECT event_id, kind, session_id, at, document, rank,
           sum(CASE WHEN kind = {Kind.IMPRESSION} THEN 1 ELSE 0 END) OVER (
               PARTITION BY session_id COLLATE "C" ORDER BY at, kind, event_id COLLATE "C"
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS page
    FROM searchlogs_searchevent
    WHERE project_id = %(project)s AND kind IN ({Kind.IMPRESSION}, {Kind.CLICK})
),
paged AS (
    SELECT *, max(CASE WHEN kind = {Kind.IMPRESSION} THEN event_id END) OVER (
        PARTITION BY session_id COLLATE "C", page) AS page_id
    FROM ordered
)
SELECT c.event_id, c.session_id, c.at, c.document, c.rank, c.page_id, d.dwell
FROM paged c
LEFT JOIN (
    SELECT click_event_id, max(dwell_seconds) AS dwell FROM searchlogs_searchevent
    WHERE project_id = %(project)s AND kind = {Kind.DWELL} GROUP BY click_event_id
) d ON d.click_event_id = c.event_id
WHERE c.kind = {Kind.CLICK}
ORDER BY c.at, c.event_id
"""


@dataclass
class UbiExport:
    queries: int = 0
    clicks: int = 0
    clicks_without_page: int = 0


def _time(moment) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def ubi_queries(project: Project, counts: UbiExport) -> Iterator[bytes]:
    """The project's results pages as ubi_queries NDJSON lines."""
    with connection.cursor() as cursor:
        cursor.execute(_PAGES_SQL, {"project": project.pk})
        for event_id, session, at, text, documents in cursor:
            counts.queries += 1
            record = {"application": APPLICATION, "query_id": event_id, "client_id": session,
                      "user_query": text, "timestamp": _time(at),
                      "query_response_hit_ids": orjson.loads(documents)}  # fmt: skip
            yield orjson.dumps(record) + b"\n"


def ubi_events(project: Project, counts: UbiExport) -> Iterator[bytes]:
    """The project's clicks as ubi_events NDJSON lines."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_nestloop = off")  # searchlogs.engines says why.
        cursor.execute(_CLICKS_SQL, {"project": project.pk})
        rows = cursor.fetchall()
    for _event, session, at, document, rank, page, dwell in rows:
        if page is None:
            counts.clicks_without_page += 1
            continue
        counts.clicks += 1
        attributes = {"object": {"object_id": document}, "position": {"ordinal": rank}}
        if dwell is not None:
            attributes["dwell_time"] = dwell
        record = {"application": APPLICATION, "action_name": "click", "query_id": page,
                  "session_id": session, "client_id": session, "timestamp": _time(at),
                  "event_attributes": attributes}  # fmt: skip
        yield orjson.dumps(record) + b"\n"
