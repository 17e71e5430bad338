"""My judgements: a filter by query, the total, each pair's history and a name for every
control; bulk grading's selects are named (issue 42, point 7).

Who may see what: alice (rater) sees her own answers; bob's stay out of her sight;
charlie (analyst) grades in bulk.
"""

import re

import pytest

from tests.factories import HitFactory, QueryFactory
from tests.judgements.test_rate_pages import answer, url


@pytest.fixture
def two_queries(project):
    tent = QueryFactory(project=project, text="tent", external_id="28")
    stove = QueryFactory(project=project, text="camping stove", external_id="7")
    return [
        HitFactory(result_list__project=project, query=query, rank=rank)
        for query in (tent, stove)
        for rank in (1, 2)
    ]


def test_my_judgements_filter_by_query_text_or_id_and_say_the_total(
    client, rater, other_rater, project, two_queries
):
    for hit in two_queries:
        answer(rater, hit)
    answer(other_rater, two_queries[0])
    client.force_login(rater)

    everything = client.get(url("my_judgements", project))
    by_text = client.get(url("my_judgements", project, q="STOVE"))
    by_id = client.get(url("my_judgements", project, q="28"))
    none = client.get(url("my_judgements", project, q="2"))

    assert everything.context["total"] == 4
    assert "4 pairs" in everything.content.decode()
    assert {a.query.text for a, _ in by_text.context["rows"]} == {"camping stove"}
    assert {a.query.text for a, _ in by_id.context["rows"]} == {"tent"}
    assert by_id.context["total"] == 2
    assert none.context["rows"] == [] and "None of your answers" in none.content.decode()


def test_each_pair_shows_its_history_oldest_first(client, rater, other_rater, project, hits):
    answer(rater, hits[0], grade=1, day=1)
    answer(rater, hits[0], grade=None, kind="cant_tell", day=2)
    answer(rater, hits[0], grade=3, day=3)
    answer(other_rater, hits[0], grade=0, day=4)
    answer(rater, hits[1], grade=2, day=1)
    client.force_login(rater)

    page = client.get(url("my_judgements", project))

    [revised, once] = [a for a, _ in page.context["rows"]]
    labels = [what for _, what, _ in revised.history]
    assert labels[1:] == ["Can't tell", "3 Perfect"] and labels[0].startswith("1 ")
    assert len(once.history) == 1
    assert page.content.decode().count('data-testid="history"') == 1


@pytest.fixture
def hits(query_with_hits):
    return list(query_with_hits.hits.order_by("rank"))


def test_every_select_and_note_of_my_judgements_has_its_own_name(client, rater, project, hits):
    for hit in hits[:3]:
        answer(rater, hit)
    client.force_login(rater)

    html = client.get(url("my_judgements", project)).content.decode()

    selects = re.findall(r'<select name="answer" aria-label="([^"]+)"', html)
    notes = re.findall(r'<input type="text" name="note"[^>]* aria-label="([^"]+)"', html)
    assert len(selects) == len(set(selects)) == 3 and len(set(notes)) == 3
    assert all(name.startswith("New answer for tent · ") for name in selects)


def test_bulk_gradings_selects_are_named_by_their_document(client, analyst, project, hits):
    client.force_login(analyst)

    html = client.get(url("bulk", project)).content.decode()

    names = re.findall(r'<select name="answer-\d+"[^>]*aria-label="([^"]+)"', html)
    names += re.findall(r'<select[^>]*aria-label="([^"]+)"[^>]*name="answer-\d+"', html)
    expected = {f"Your answer for {hit.document}" for hit in hits}
    assert set(names) == expected
