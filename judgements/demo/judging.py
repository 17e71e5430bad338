"""The judging campaign: who graded which pooled pair, when, and who changed their mind.

Pools are the union of the top `depth` hits of every result list.  Each pair goes to two of
the three raters, rotating so every pair of raters overlaps; about one pair in ten is left
unjudged and a few have only their first judgement, so the queue still has work.  Queries
are worked through over the two weeks before 2026-11-20, so metrics computed "as of" a date
move as judgements arrive, and a few later revisions tell their own story.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from .catalogue import Product, Query
from .rankers import Hit
from .raters import RATERS, rng_for, simulated_verdict, true_grade

START = datetime(2026, 11, 6, tzinfo=UTC)
END = datetime(2026, 11, 20, tzinfo=UTC)
LAST_DAY = (END - START).days - 1
ROTATION = tuple((RATERS[i], RATERS[(i + 1) % len(RATERS)]) for i in range(len(RATERS)))
UNJUDGED_SHARE = 0.10
HALF_JUDGED_SHARE = 0.05
REVISION_SHARE = 0.2
REVISION_NOTE = "Changed my mind after re-reading the description."


def pool(hit_lists: Sequence[Sequence[Hit]], depth: int) -> list[str]:
    """Union of the top `depth` ids of each list, interleaved by rank, first seen first."""
    seen: dict[str, None] = {}
    for rank in range(depth):
        for hits in hit_lists:
            if rank < len(hits):
                seen.setdefault(hits[rank][0], None)
    return list(seen)


def _event(
    rater: str, query: Query, product: Product, grade: int | None, note: str, created_at: datetime
) -> dict[str, Any]:
    return {
        "rater": rater,
        "query": query.text,
        "external_id": product.external_id,
        "grade": grade,
        "note": note,
        "created_at": created_at,
    }


def rater_events(
    rater: str, order: int, query: Query, product: Product, first_day: int, seed: int
) -> list[dict[str, Any]]:
    """One rater's judgement of a pair, plus sometimes a later, corrected one."""
    rng = rng_for(seed, "schedule", rater, query.text, product.external_id)
    day = min(first_day + order * rng.randint(0, 2), LAST_DAY)
    when = START + timedelta(
        days=day,
        hours=8 + rng.randint(0, 9),
        minutes=rng.randint(0, 59),
        seconds=rng.randint(0, 59),
    )
    verdict = simulated_verdict(rater, query, product, seed)
    events = [_event(rater, query, product, verdict.grade, verdict.note, when)]
    truth = true_grade(query, product)
    if verdict.grade != truth and rng.random() < REVISION_SHARE:
        later = when + timedelta(days=rng.randint(1, 3), hours=rng.randint(0, 5))
        later = min(later, END - timedelta(minutes=rng.randint(5, 240)))
        if later > when:
            events.append(_event(rater, query, product, truth, REVISION_NOTE, later))
    return events


def judge_query(
    query_index: int, query: Query, pooled: Sequence[Product], n_queries: int, seed: int
) -> list[dict[str, Any]]:
    """All judgement events for one query's pool."""
    first_day = query_index * (LAST_DAY + 1) // n_queries
    events: list[dict[str, Any]] = []
    for position, product in enumerate(pooled):
        raters = ROTATION[(query_index + position) % len(ROTATION)]
        fate = rng_for(seed, "fate", query.text, product.external_id).random()
        if fate < UNJUDGED_SHARE:
            continue
        if fate < UNJUDGED_SHARE + HALF_JUDGED_SHARE:
            raters = raters[:1]
        for order, rater in enumerate(raters):
            events.extend(rater_events(rater, order, query, product, first_day, seed))
    return events


def judge_all(
    queries: Sequence[Query],
    products: Mapping[str, Product],
    hits_by_list: Sequence[Mapping[str, Sequence[Hit]]],
    depth: int,
    seed: int,
) -> list[dict[str, Any]]:
    """Every judgement event of the campaign, oldest first."""
    events: list[dict[str, Any]] = []
    for index, query in enumerate(queries):
        ids = pool([hits[query.text] for hits in hits_by_list], depth)
        pooled = [products[external_id] for external_id in ids]
        events.extend(judge_query(index, query, pooled, len(queries), seed))
    events.sort(key=lambda e: (e["created_at"], e["rater"], e["query"], e["external_id"]))
    return events
