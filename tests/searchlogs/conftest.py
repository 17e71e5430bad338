import json

import pytest

from tests.api.conftest import _fresh_throttles, client_as  # noqa: F401  (fixtures)
from tests.factories import QueryFactory

# Personas as in tests/conftest.py: charlie (analyst) may ingest logs and read the
# online metrics; alice (rater) may not; dave (no role) and anonymous visitors get nothing.


def jsonl(*events) -> bytes:
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


def impression(event_id, session, time, query, results=("SKU-1", "SKU-2"), **extra):
    return {
        "type": "impression", "id": event_id, "session": session, "time": time,
        "query": query, "results": list(results), **extra,
    }  # fmt: skip


def click(event_id, session, time, document, rank=1):
    return {
        "type": "click", "id": event_id, "session": session, "time": time,
        "document": document, "rank": rank,
    }  # fmt: skip


def dwell(event_id, session, time, click_id, seconds=None, end=False):
    event = {"type": "dwell", "id": event_id, "session": session, "time": time, "click": click_id}
    return event | ({"end_of_session": True} if end else {"seconds": seconds})


# The three worked sessions of tests/metrics/core/test_online.py, as a log on
# 2026-11-20: s1 clicks briefly, searches again and stays 45 s on a second click;
# s2's page answers the query; s3 searches twice and leaves.
WORKED_LOG = [
    impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"),
    click("e2", "s1", "2026-11-20T10:00:05Z", "SKU-1"),
    dwell("e3", "s1", "2026-11-20T10:00:08Z", "e2", seconds=3),
    impression("e4", "s1", "2026-11-20T10:00:20Z", "Tent  Pegs"),
    click("e5", "s1", "2026-11-20T10:00:30Z", "SKU-2", rank=2),
    dwell("e6", "s1", "2026-11-20T10:01:15Z", "e5", seconds=45),
    impression("e7", "s2", "2026-11-20T11:00:00Z", "TENT", answered=True),
    impression("e8", "s3", "2026-11-20T12:00:00Z", "sleeping bag"),
    impression("e9", "s3", "2026-11-20T12:00:30Z", "sleeping bag"),
]


@pytest.fixture
def queries(query_with_hits):
    """The project's queries "tent" (from query_with_hits) and "tent pegs"."""
    pegs = QueryFactory(project=query_with_hits.project, text="tent pegs")
    return {"tent": query_with_hits, "tent pegs": pegs}
