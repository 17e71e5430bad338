"""A small generated search log for the demo project, so the overview shows the panel.

Deterministic (a fixed seed): 14 days from 2026-11-06, the demo's judging fortnight,
about 40 sessions a day. Searchers type the demo's queries (sometimes in other case
or spacing, and sometimes a text the project does not have), see the newest result
list's top 10, click by rank and stay longer on better-ranked results. Click-through
drifts up over the fortnight. Loading it again changes nothing: events keep their ids.
"""

import json
from datetime import UTC, datetime, timedelta

import numpy as np

from judgements.models import Project
from searchlogs.services import IngestResult, search_log_ingest

START = datetime(2026, 11, 6, 8, tzinfo=UTC)
DAYS, SESSIONS_PER_DAY, SEED = 14, 40, 7
UNKNOWN_TEXTS = ("tnet", "hiking boots waterproof womens", "gas canister")


def demo_search_log_load(project: Project) -> IngestResult:
    pages = _pages(project)
    events = _events(pages, np.random.default_rng(SEED))
    lines = (json.dumps(event).encode() + b"\n" for event in events)
    return search_log_ingest(project=project, upload=lines)


def _pages(project: Project) -> dict[str, list[str]]:
    """Each query's top 10 in the newest result list."""
    newest = project.result_lists.order_by("-captured_at").first()
    pages: dict[str, list[str]] = {}
    if newest is None:
        return pages
    hits = newest.hits.filter(rank__lte=10).order_by("query__text", "rank")
    for text, document in hits.values_list("query__text", "document__external_id"):
        pages.setdefault(text, []).append(document)
    return pages


def _events(pages: dict[str, list[str]], rng: np.random.Generator):
    texts = sorted(pages)
    if not texts:
        return
    for day in range(DAYS):
        for number in range(SESSIONS_PER_DAY):
            session = f"demo-{day:02d}-{number:02d}"
            start = START + timedelta(days=day, seconds=int(rng.integers(0, 12 * 3600)))
            yield from _session(session, start, day, texts, pages, rng)


def _session(session, start, day, texts, pages, rng):
    moment, count = start, 0
    for _ in range(int(rng.integers(1, 4))):
        count += 1
        typed, text = _typed(texts, rng)
        shown = pages.get(text, [])
        answered = bool(rng.random() < 0.08)
        yield _event("impression", session, count, moment, query=typed, results=shown,
                     answered=answered)  # fmt: skip
        moment += timedelta(seconds=int(rng.integers(2, 8)))
        for rank in _clicked_ranks(len(shown), day, rng):
            count += 1
            click_id = f"{session}-{count}"
            yield _event("click", session, count, moment, document=shown[rank - 1], rank=rank)
            seconds = float(np.round(rng.exponential(40 / rank), 1))
            count += 1
            moment += timedelta(seconds=seconds)
            yield _event("dwell", session, count, moment, click=click_id, seconds=seconds)
        if rng.random() < 0.5:
            return
        moment += timedelta(seconds=int(rng.integers(3, 20)))


def _typed(texts, rng) -> tuple[str, str]:
    """What the searcher typed, and the project's query it stands for."""
    if rng.random() < 0.05:
        return str(rng.choice(UNKNOWN_TEXTS)), ""
    text = str(rng.choice(texts))
    return (text.upper() if rng.random() < 0.1 else f" {text} "), text


def _clicked_ranks(shown: int, day: int, rng) -> list[int]:
    ranks = np.arange(1, shown + 1)
    chance = (0.25 + 0.01 * day) / ranks
    return [int(rank) for rank in ranks[rng.random(shown) < chance]]


def _event(kind, session, count, moment, **fields) -> dict:
    return {"type": kind, "id": f"{session}-{count}", "session": session,
            "time": moment.isoformat(), **fields}  # fmt: skip
