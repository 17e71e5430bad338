"""What the unjudged hits leave open, beside the numbers of one list (issue 38, points 1
and 2): the overview's list table (unjudged hits in the top k and how many the queue
holds), the query page and the working API (the same counts and the query's range)."""

import re

import pytest

from metrics.core.bounds import ndcg_range
from tests.api.test_compare_verdict import QUERIES, project_of

QUERY_IDS = [f"q{i}" for i in range(QUERIES)]


@pytest.fixture
def open_project(db):
    """Four lists over the same queries, one relevant document ("good", graded 3) each:
    ``judged`` returns it alone; ``fresh`` puts an unjudged document above it; ``deep``
    puts one below it, at rank 2, past the pool depth of 1 (so not in the queue, since
    no list ranks it first); ``other`` returns one unjudged document, "elsewhere", which
    is in the pool for every query, but which ``fresh`` does not return."""
    return project_of(
        "open-hits",
        {
            "judged": [(q, "good") for q in QUERY_IDS],
            "fresh": [(q, d) for q in QUERY_IDS for d in ("new", "good")],
            "deep": [(q, d) for q in QUERY_IDS for d in ("good", "deeper")],
            "other": [(q, "elsewhere") for q in QUERY_IDS],
        },
        [(q, "good", 3) for q in QUERY_IDS],
        pool_depth=1,
    )


def text_of(response) -> str:
    assert response.status_code == 200, response.content[:2000]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def cells(html: str, testid: str) -> list[str]:
    return re.findall(rf'data-testid="{testid}">([^<]*)<', html)


@pytest.mark.parametrize("k", [1, 10])
def test_the_overviews_list_table_counts_each_lists_unjudged_hits_and_those_queued(
    client, analyst, open_project, k
):
    """k = 1 is within the pool depth: every unjudged hit there is queued; at k = 10 the
    deep list's rank-2 hits are past it and no list ranks them first, so none is."""
    project, made = open_project
    client.force_login(analyst)

    response = client.get(f"/metrics/{project.slug}/", {"k": k})

    html = response.content.decode()
    assert response.status_code == 200
    order = [made[name].name for name in ("judged", "fresh", "deep", "other")]
    assert [name for name in re.findall(r">([a-z]+)</a>", html) if name in order] == order
    expected = {1: (0, 12, 0, 12), 10: (0, 12, 12, 12)}[k]
    queued = {1: (0, 12, 0, 12), 10: (0, 12, 0, 12)}[k]
    assert cells(html, "list-unjudged") == [str(n) for n in expected]
    assert cells(html, "queued") == [str(n) for n in queued]
    assert "In queue: how many of them the raters' queue holds" in text_of(response)


def test_the_query_page_says_what_its_unjudged_hits_leave_open(client, analyst, open_project):
    project, made = open_project
    fresh = made["fresh"]
    query = project.queries.get(external_id="q0")
    client.force_login(analyst)

    text = text_of(client.get(f"/metrics/{project.slug}/{fresh.pk}/queries/{query.pk}/"))

    # "elsewhere" (the other list's unjudged hit, in the queue) could join the ideal.
    scale = range(project.max_grade + 1)
    expected = ndcg_range([None, 3], [3], k=10, grades=scale, others=1)
    assert expected.low < expected.high
    assert (
        "Not every hit is graded: 1 of the top 10 hits has no grade (1 in the raters' queue),"
        " and the queue holds 1 more unjudged document of this query that other lists return."
        f" With every grade they could get (the ideal ranking recomputed with them), NDCG@10"
        f" lies between {expected.low:.4f} and {expected.high:.4f}." in text
    )
    assert f"Could be, once graded {expected.low:.4f} to {expected.high:.4f}" in text


def test_a_fully_judged_query_page_says_nothing_is_open(client, analyst, open_project):
    project, made = open_project
    query = project.queries.get(external_id="q0")
    client.force_login(analyst)

    text = text_of(client.get(f"/metrics/{project.slug}/{made['judged'].pk}/queries/{query.pk}/"))

    assert "Not every hit is graded" not in text and "Could be, once graded" not in text


def test_the_working_api_gives_the_querys_open_hits_and_bounds(charlie, open_project):
    project, made = open_project
    query = project.queries.get(external_id="q0")
    scale = range(project.max_grade + 1)

    def working(name, **params):
        response = charlie.get(
            f"/api/result-lists/{made[name].pk}/queries/{query.pk}/working/", params
        )
        assert response.status_code == 200, response.content
        return response.json()

    fresh = working("fresh", k=10)
    expected = ndcg_range([None, 3], [3], k=10, grades=scale, others=1)
    assert (fresh["unjudged_in_top_k"], fresh["queued"]) == (1, 1)
    assert fresh["bounds"] == pytest.approx({"low": expected.low, "high": expected.high})
    assert fresh["bounds"]["low"] <= fresh["ndcg"] <= fresh["bounds"]["high"]
    # Past the pool depth the unjudged hit is not queued ("new" and "elsewhere" are, and
    # could join the ideal).
    deep = working("deep", k=2)
    expected = ndcg_range([3, None], [3], k=2, grades=scale, others=2)
    assert (deep["unjudged_in_top_k"], deep["queued"]) == (1, 0)
    assert deep["bounds"] == pytest.approx({"low": expected.low, "high": expected.high})
    assert deep["bounds"]["low"] < deep["bounds"]["high"] == deep["ndcg"] == 1.0
    judged = working("judged", k=10)
    assert (judged["unjudged_in_top_k"], judged["queued"]) == (0, 0)
    assert judged["ndcg"] == 1.0
    assert judged["bounds"] == {"low": 1.0, "high": 1.0}


@pytest.mark.parametrize("name, queued", [("fresh", QUERIES), ("deep", 0)])
def test_the_comparisons_queued_hits_are_the_unjudged_works_in_pool(
    charlie, open_project, name, queued
):
    """Within the pool depth every unjudged hit is queued; past it (the deep list's rank
    2 under a pool depth of 1) only where another list ranks the pair within it."""
    project, made = open_project
    other = made[name]

    body = charlie.get(
        f"/api/projects/{project.slug}/compare/", {"a": made["judged"].pk, "b": other.pk, "k": 10}
    ).json()

    work = charlie.get(f"/api/result-lists/{other.pk}/unjudged/", {"k": 10}).json()
    assert body["b"]["unjudged_in_top_k"] == work["unjudged"] == QUERIES
    assert body["b"]["queued"] == work["in_pool"] == queued
