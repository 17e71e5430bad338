"""GET /api/result-lists/<id>/unjudged/: hits within the cut-off that have no grade yet."""

import pytest

from tests.factories import DocumentFactory, HitFactory, JudgementFactory

# Charlie (analyst) reads the unjudged work; others are refused (test_role_matrix).


def unjudged(client, result_list, **params) -> dict:
    response = client.get(f"/api/result-lists/{result_list.pk}/unjudged/", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_it_counts_the_top_k_hits_without_a_grade(charlie, shop):
    prod = shop.result_lists.get(name="prod")

    body = unjudged(charlie, prod, k=3)

    # lamp's D4 and D3 (ranks 2, 3) and rope's D7 (only a "can't tell") and D8.
    assert (body["k"], body["queries"], body["hits"]) == (3, 4, 11)
    assert (body["judged"], body["unjudged"], body["provisional"]) == (7, 4, True)
    assert [(row["text"], row["unjudged"], row["first_rank"]) for row in body["results"]] == [
        ("lamp", 2, 2),
        ("rope", 2, 1),
    ]
    assert body["results"][1]["external_id"] == "R-4"


def test_k_defaults_to_the_projects_and_agrees_with_the_metrics(charlie, shop):
    prod = shop.result_lists.get(name="prod")

    body = unjudged(charlie, prod)
    metrics = charlie.get(f"/api/result-lists/{prod.pk}/metrics/").json()

    assert body["k"] == shop.metric_k == metrics["spec"]["k"]
    assert body["unjudged"] == metrics["unjudged"] == 4
    assert body["hits"] == sum(row["retrieved"] for row in metrics["results"])


def test_hits_below_the_pool_depth_in_every_list_are_not_in_the_queue(charlie, shop):
    prod = shop.result_lists.get(name="prod")
    stove = shop.queries.get(text="stove")
    HitFactory(result_list=prod, query=stove, document=DocumentFactory(project=shop), rank=5)

    body = unjudged(charlie, prod, k=5)

    assert (body["pool_depth"], body["unjudged"]) == (3, 5)
    assert (body["in_pool"], body["outside_pool"]) == (4, 1)


def test_before_any_grade_every_hit_is_unjudged(charlie, shop):
    prod = shop.result_lists.get(name="prod")

    body = unjudged(charlie, prod, k=3, as_of="2026-11-02T00:00:00Z")

    assert (body["hits"], body["unjudged"], body["judged"]) == (11, 11, 0)
    assert body["as_of"] == "2026-11-02T00:00:00Z"


def test_once_every_hit_is_graded_the_numbers_are_final(charlie, shop, other_rater):
    candidate = shop.result_lists.get(name="candidate")
    rope = shop.queries.get(text="rope")
    assert unjudged(charlie, candidate, k=2)["unjudged"] == 2
    for hit in candidate.hits.filter(query=rope):
        JudgementFactory(query=rope, document=hit.document, rater=other_rater, grade=0)

    body = unjudged(charlie, candidate, k=2)

    # tent D2 D1, stove D1 D2 and lamp D1 D2 were graded already.
    assert (body["unjudged"], body["provisional"], body["results"]) == (0, False, [])


@pytest.mark.parametrize("params", [{"k": "0"}, {"k": "1001"}, {"as_of": "soon"}])
def test_bad_parameters_get_a_400(charlie, shop, params):
    prod = shop.result_lists.get(name="prod")

    response = charlie.get(f"/api/result-lists/{prod.pk}/unjudged/", params)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] in params
