"""Tests for the demo data behind `manage.py load_demo` (plain Python, no database).

Nothing here needs Django.  To run without it, also skip tests/conftest.py (it imports DRF)
and the pytest-django option in addopts:
    .venv/bin/python -m pytest tests/judgements/test_demo_data.py -q \
        -p no:django --noconftest -o addopts=""
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from datetime import UTC, datetime

import pytest

from judgements.demo import DemoData, build_demo
from judgements.demo.catalogue import products, queries
from judgements.demo.judging import pool
from judgements.demo.rankers import bm25_rank, title_overlap_rank, tokenize
from judgements.demo.raters import true_grade

GRADES = {0, 1, 2, 3, None}


@pytest.fixture(scope="module")
def demo() -> DemoData:
    return build_demo()


def latest_grades(demo: DemoData) -> dict[tuple[str, str], dict[str, int | None]]:
    """(query, external_id) -> {rater: the rater's most recent grade}."""
    by_pair: dict[tuple[str, str], dict[str, int | None]] = defaultdict(dict)
    for event in sorted(demo.judgements, key=lambda e: e["created_at"]):
        by_pair[(event["query"], event["external_id"])][event["rater"]] = event["grade"]
    return by_pair


def ndcg_at_10(ranked_ids: list[str], gains: dict[str, int]) -> float:
    """Linear-gain NDCG@10; the ideal ranking uses every document's true grade."""

    def dcg(values: list[int]) -> float:
        return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(values[:10]))

    ideal = dcg(sorted(gains.values(), reverse=True))
    return dcg([gains[i] for i in ranked_ids]) / ideal if ideal else 0.0


def test_build_demo_is_deterministic() -> None:
    assert build_demo() == build_demo()
    assert build_demo(seed=7) == build_demo(seed=7)


def test_seed_changes_the_raters_but_not_the_catalogue() -> None:
    first, second = build_demo(seed=1), build_demo(seed=2)
    assert first.documents == second.documents
    assert first.result_lists == second.result_lists
    assert first.judgements != second.judgements


def test_catalogue_size_and_unique_ids(demo: DemoData) -> None:
    ids = [document["external_id"] for document in demo.documents]
    texts = [text for text, _ in demo.queries]
    assert len(demo.queries) >= 30
    assert len(demo.documents) >= 300
    assert len(set(ids)) == len(ids)
    assert len({document["url"] for document in demo.documents}) == len(ids)
    assert len(set(texts)) == len(texts)
    assert all(description.strip() for _, description in demo.queries)


def test_documents_look_like_shop_listings(demo: DemoData) -> None:
    for document in demo.documents:
        assert set(document) == {"external_id", "title", "url", "snippet", "image", "fields"}
        assert document["external_id"].startswith("SKU-")
        assert document["url"].startswith("https://shop.example.com/p/")
        assert document["image"] is None or document["image"].startswith(
            "https://shop.example.com/img/"
        )
        assert {"brand", "category", "price", "colour", "weight_g", "rating"} <= set(
            document["fields"]
        )
        float(document["fields"]["price"])
    assert 0 < sum(d["image"] is not None for d in demo.documents) < len(demo.documents) / 2


def test_every_hit_and_judgement_refers_to_the_catalogue(demo: DemoData) -> None:
    ids = {document["external_id"] for document in demo.documents}
    texts = {text for text, _ in demo.queries}
    assert len(demo.result_lists) == 2
    for result_list in demo.result_lists:
        assert set(result_list["hits"]) == texts
        for hits in result_list["hits"].values():
            assert len(hits) <= 20
            assert {external_id for external_id, _ in hits} <= ids
            assert [score for _, score in hits] == sorted((s for _, s in hits), reverse=True)
    assert {event["external_id"] for event in demo.judgements} <= ids
    assert {event["query"] for event in demo.judgements} <= texts


def test_judgements_are_well_formed(demo: DemoData) -> None:
    raters = {user["username"] for user in demo.users if user["role"] == "rater"}
    assert raters == {"rater_ann", "rater_ben", "rater_cai"}
    start, end = datetime(2026, 11, 6, tzinfo=UTC), datetime(2026, 11, 20, tzinfo=UTC)
    for event in demo.judgements:
        assert event["rater"] in raters
        assert event["grade"] in GRADES
        assert isinstance(event["note"], str)
        assert event["created_at"].utcoffset().total_seconds() == 0
        assert start <= event["created_at"] < end
    assert None in {event["grade"] for event in demo.judgements}
    assert sum(bool(event["note"]) for event in demo.judgements) < len(demo.judgements) / 5


def test_pairs_are_judged_by_at_most_two_raters(demo: DemoData) -> None:
    assert max(len(graders) for graders in latest_grades(demo).values()) == 2


def test_bm25_beats_title_overlap_on_true_grades(demo: DemoData) -> None:
    catalogue = products()
    means = {}
    for result_list in demo.result_lists:
        scores = []
        for query in queries():
            gains = {p.external_id: true_grade(query, p) for p in catalogue}
            ranked = [external_id for external_id, _ in result_list["hits"][query.text]]
            scores.append(ndcg_at_10(ranked, gains))
        means[result_list["name"]] = sum(scores) / len(scores)
    assert means["bm25 2026-11-02"] > means["title-match 2026-10-19"] + 0.02
    assert 0.5 < means["title-match 2026-10-19"] < means["bm25 2026-11-02"] < 0.98


def test_raters_agree_on_most_pairs_but_not_all(demo: DemoData) -> None:
    graded_twice = [
        graders
        for graders in latest_grades(demo).values()
        if len(graders) == 2 and None not in graders.values()
    ]
    agreeing = sum(len(set(graders.values())) == 1 for graders in graded_twice)
    assert len(graded_twice) > 200
    assert 0.5 <= agreeing / len(graded_twice) <= 0.95


def test_lenient_and_strict_raters_differ_in_mean_grade(demo: DemoData) -> None:
    grades = defaultdict(list)
    for event in demo.judgements:
        if event["grade"] is not None:
            grades[event["rater"]].append(event["grade"])
    mean = {rater: sum(values) / len(values) for rater, values in grades.items()}
    assert mean["rater_ben"] > mean["rater_ann"] > mean["rater_cai"]


def test_some_pool_pairs_are_left_unjudged(demo: DemoData) -> None:
    judged = set(latest_grades(demo))
    pooled = {
        (text, external_id)
        for text, _ in demo.queries
        for external_id in pool([rl["hits"][text] for rl in demo.result_lists], 10)
    }
    assert judged <= pooled
    assert 0.03 <= len(pooled - judged) / len(pooled) <= 0.2


def test_some_raters_change_their_mind_later(demo: DemoData) -> None:
    history = defaultdict(list)
    for event in demo.judgements:
        history[(event["rater"], event["query"], event["external_id"])].append(event)
    revised = [events for events in history.values() if len(events) > 1]
    assert 3 <= len(revised) <= 60
    for first, second in revised:
        assert second["created_at"] > first["created_at"]
        assert second["grade"] != first["grade"]


def test_project_and_users(demo: DemoData) -> None:
    assert demo.project["slug"] == "outdoor-gear"
    assert demo.project["judges_per_pair"] == 2
    assert demo.project["pool_depth"] == 10
    assert 15 <= len(demo.project["guidelines"].strip().splitlines()) <= 40
    roles = Counter(user["role"] for user in demo.users)
    assert roles == Counter({"rater": 3, "analyst": 1, "admin": 1})


def test_true_grade_follows_the_hidden_intent() -> None:
    by_title = {p.title: p for p in products()}
    query = next(q for q in queries() if q.text == "2 person backpacking tent")
    grade = {title: true_grade(query, product) for title, product in by_title.items()}
    assert grade["Ridgeline Featherlite 2 Ultralight Backpacking Tent"] == 3
    assert grade["Ridgeline Featherlite 1 Ultralight Backpacking Tent"] == 1
    assert grade["Ridgeline Featherlite 2 Tent Footprint"] == 1
    assert grade["Cairnfield Homestead 6 Family Dome Tent"] == 0
    assert grade["Emberwood Flicker Canister Stove"] == 0
    # The 2-grade example of the guidelines: rechargeable, but micro-USB rather than USB-C.
    headlamp = next(q for q in queries() if q.text == "headlamp rechargeable")
    assert true_grade(headlamp, by_title["Basecamp Basics Charge 250 USB Headlamp"]) == 2


def test_tokenizer_lowercases_drops_stopwords_and_plurals() -> None:
    assert tokenize("Tents for the Women's BOOTS, 2-person") == [
        "tent",
        "women",
        "boot",
        "2",
        "person",
    ]
    assert tokenize("glass batteries") == ["glass", "battery"]


TOY = [
    {"external_id": "d1", "title": "red tent", "snippet": "", "fields": {}},
    {"external_id": "d2", "title": "blue tent", "snippet": "light tent", "fields": {}},
    {"external_id": "d3", "title": "red stove", "snippet": "", "fields": {}},
]


def test_bm25_matches_hand_computed_scores() -> None:
    """BM25 with Lucene's IDF: idf = ln(1 + (N - n + 0.5) / (n + 0.5)), k1=1.2, b=0.75.

    Toy corpus: N=3, lengths 2, 4, 2, so avgdl = 8/3.  "tent" is in n=2 docs:
    idf = ln(1 + 1.5/2.5) = ln(1.6).
    d1: tf=1, dl/avgdl=0.75 -> 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 0.75)) = 2.2 / 1.975
    d2: tf=2, dl/avgdl=1.5  -> 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 1.5)) = 4.4 / 3.65
    """
    idf = math.log(1.6)
    hits = bm25_rank("tent", TOY)
    assert [doc_id for doc_id, _ in hits] == ["d2", "d1"]
    assert hits[0][1] == pytest.approx(idf * 4.4 / 3.65, abs=1e-4)  # 0.5666
    assert hits[1][1] == pytest.approx(idf * 2.2 / 1.975, abs=1e-4)  # 0.5235
    # "red" has the same df and length profile as "tent" in d1, so d1 scores twice that.
    two_terms = dict(bm25_rank("red tents", TOY))
    assert two_terms["d1"] == pytest.approx(2 * idf * 2.2 / 1.975, abs=1e-4)
    assert two_terms["d3"] == pytest.approx(idf * 2.2 / 1.975, abs=1e-4)
    assert bm25_rank("tent", TOY, top=1) == hits[:1]


def test_title_overlap_counts_title_words_and_breaks_ties_by_id() -> None:
    docs = [{**TOY[1], "external_id": "z"}, {**TOY[0], "external_id": "a"}, TOY[2]]
    assert title_overlap_rank("red tent", docs) == [("a", 2.0), ("d3", 1.0), ("z", 1.0)]
    assert title_overlap_rank("light", docs) == []  # snippets are not searched
