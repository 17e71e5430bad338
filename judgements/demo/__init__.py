"""Deterministic demo data for `python manage.py load_demo`: plain Python, no Django.

`build_demo()` returns everything the management command writes to the database: a project,
an outdoor-shop catalogue, queries, two captured result lists, a fortnight of simulated
judgements and the demo users.  The same seed always yields equal data.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .catalogue import products, queries
from .guidelines import GUIDELINES
from .judging import judge_all
from .rankers import BM25Index, title_overlap_rank

POOL_DEPTH = 10
USERS = (
    {"username": "rater_ann", "role": "rater", "first_name": "Ann"},
    {"username": "rater_ben", "role": "rater", "first_name": "Ben"},
    {"username": "rater_cai", "role": "rater", "first_name": "Cai"},
    {"username": "analyst", "role": "analyst", "first_name": "Dana"},
    {"username": "admin", "role": "admin", "first_name": "Alex"},
)

__all__ = ["DemoData", "build_demo"]


@dataclass(frozen=True)
class DemoData:
    """The demo project, ready to be written to the database by the lead's command."""

    project: dict[str, Any]
    queries: list[tuple[str, str]]
    documents: list[dict[str, Any]]
    result_lists: list[dict[str, Any]]
    judgements: list[dict[str, Any]]
    users: list[dict[str, str]]


def _result_lists(documents: list[dict[str, Any]], texts: list[str]) -> list[dict[str, Any]]:
    """The two rankers' top 20 per query, as captured by the search team on two dates."""
    index = BM25Index(documents, k1=1.2, b=0.75)
    return [
        {
            "name": "bm25 2026-11-02",
            "engine": "bm25 k1=1.2 b=0.75",
            "captured_at": datetime(2026, 11, 2, 9, 30, tzinfo=UTC),
            "hits": {text: index.rank(text, top=20) for text in texts},
        },
        {
            "name": "title-match 2026-10-19",
            "engine": "title token overlap",
            "captured_at": datetime(2026, 10, 19, 14, 5, tzinfo=UTC),
            "hits": {text: title_overlap_rank(text, documents, top=20) for text in texts},
        },
    ]


def build_demo(seed: int = 20261121) -> DemoData:
    """Build the demo; `seed` drives only the simulated raters (grades, timing, gaps)."""
    catalogue = products()
    demo_queries = queries()
    documents = [product.as_document() for product in catalogue]
    result_lists = _result_lists(documents, [query.text for query in demo_queries])
    by_id = {product.external_id: product for product in catalogue}
    hits = [result_list["hits"] for result_list in result_lists]
    project = {
        "name": "Outdoor gear shop",
        "slug": "outdoor-gear",
        "guidelines": GUIDELINES,
        "judges_per_pair": 2,
        "pool_depth": POOL_DEPTH,
    }
    return DemoData(
        project=project,
        queries=[(query.text, query.description) for query in demo_queries],
        documents=documents,
        result_lists=result_lists,
        judgements=judge_all(demo_queries, by_id, hits, POOL_DEPTH, seed),
        users=[dict(user) for user in USERS],
    )
