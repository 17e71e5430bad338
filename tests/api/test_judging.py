"""The judgement log, a machine rater's loop (next pair, answer), grades and consensus."""

import datetime as dt

import pytest

from judgements.models import Judgement
from tests.factories import DocumentFactory, JudgementFactory


@pytest.fixture
def alice(client_as, rater):
    return client_as(rater)


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def test_the_log_pages_with_a_cursor_in_the_order_it_was_written(charlie, judged):
    first = charlie.get("/api/judgements/?page_size=2").json()
    second = charlie.get(first["next"]).json()
    ids = [event["id"] for event in first["results"] + second["results"]]
    assert ids == sorted(ids) and len(ids) == 4
    assert first["results"][0]["query_text"] == "tent"


@pytest.mark.parametrize(
    ("params", "count"),
    [
        ("rater=bob", 2),
        ("kind=cant_tell", 1),
        ("source=web", 5),
        ("source=import", 0),
        ("project=outdoor", 5),
        ("project=elsewhere", 0),
        ("since=2026-01-01T00:00:00Z", 5),
        ("until=2026-01-01T00:00:00Z", 0),
    ],
)
def test_the_log_filters(charlie, judged, params, count):
    assert len(charlie.get(f"/api/judgements/?{params}").json()["results"]) == count


def test_the_log_filters_by_query_and_document(charlie, judged):
    document = judged.hits.get(rank=2).document
    url = f"/api/judgements/?query={judged.pk}&document={document.pk}"
    assert len(charlie.get(url).json()["results"]) == 2


def test_a_bad_filter_is_a_field_error(charlie, judged):
    response = charlie.get("/api/judgements/?since=yesterday&query=1.5")
    assert response.status_code == 400
    assert {error["field"] for error in response.json()["errors"]} == {"since", "query"}


def test_a_machine_rater_takes_the_next_pair_and_answers_it(alice, query_with_hits):
    pair = alice.get("/api/projects/outdoor/next/").json()
    assert (pair["query"]["text"], pair["document"]["external_id"]) == ("tent", "SKU-1")
    assert [step["value"] for step in pair["scale"]] == [0, 1, 2, 3]
    answer = {"query": pair["query"]["id"], "document": pair["document"]["id"], "grade": 2}
    response = alice.post("/api/judgements/create/", answer | {"note": "llm-judge v1"})
    assert response.status_code == 201
    event = Judgement.objects.get()
    assert (event.source, event.grade, event.note, event.rater.username) == (
        "api",
        2,
        "llm-judge v1",
        "alice",
    )
    assert alice.get("/api/projects/outdoor/next/").json()["document"]["external_id"] == "SKU-2"


def test_asking_again_before_answering_returns_the_same_pair(alice, query_with_hits):
    first = alice.get("/api/projects/outdoor/next/").json()
    assert alice.get("/api/projects/outdoor/next/").json() == first


def test_an_empty_queue_is_204(alice, query_with_hits, rater):
    for hit in query_with_hits.hits.all():
        JudgementFactory(query=query_with_hits, document=hit.document, rater=rater, grade=1)
    assert alice.get("/api/projects/outdoor/next/").status_code == 204


def test_cant_tell_and_retractions_are_answers_too(alice, query_with_hits):
    document = query_with_hits.hits.get(rank=1).document
    pair = {"query": query_with_hits.pk, "document": document.pk}
    assert alice.post("/api/judgements/create/", pair | {"kind": "cant_tell"}).status_code == 201
    assert alice.post("/api/judgements/create/", pair | {"kind": "retract"}).status_code == 201
    assert list(Judgement.objects.order_by("id").values_list("kind", "grade")) == [
        ("cant_tell", None),
        ("retract", None),
    ]


@pytest.mark.parametrize(
    ("answer", "field", "words"),
    [
        ({"grade": 7}, "grade", "Grade 7 is outside the scale 0-3."),
        ({}, "grade", "A grade is required"),
        ({"kind": "cant_tell", "grade": 1}, "grade", "Only a grade event carries a grade."),
        ({"query": 999999}, "query", 'Invalid pk "999999"'),
        ({"kind": "maybe"}, "kind", '"maybe" is not a valid choice.'),
    ],
)
def test_a_bad_answer_names_its_field(alice, query_with_hits, answer, field, words):
    document = query_with_hits.hits.get(rank=1).document
    body = {"query": query_with_hits.pk, "document": document.pk} | answer
    response = alice.post("/api/judgements/create/", body, format="json")
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert (error["field"], error["line"]) == (field, None)
    assert error["message"].startswith(words)
    assert not Judgement.objects.exists()


def test_a_pair_outside_the_pool_is_refused(alice, query_with_hits):
    stranger = DocumentFactory(project=query_with_hits.project, external_id="NOT-RANKED")
    body = {"query": query_with_hits.pk, "document": stranger.pk, "grade": 1}
    response = alice.post("/api/judgements/create/", body, format="json")
    assert response.status_code == 400
    assert "not a pair of" in response.json()["errors"][0]["message"]


def test_current_grades_list_each_raters_newest_grade(charlie, judged):
    rows = charlie.get("/api/projects/outdoor/grades/").json()["results"]
    assert [(row["external_id"], row["rater"], row["grade"]) for row in rows] == [
        ("SKU-1", "alice", 3),
        ("SKU-1", "bob", 2),
        ("SKU-2", "alice", 0),
    ]


def test_consensus_can_be_taken_as_of_a_moment(charlie, judged, rater):
    later = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    document = judged.hits.get(rank=1).document
    JudgementFactory(query=judged, document=document, rater=rater, grade=0, created_at=later)
    now = charlie.get("/api/projects/outdoor/consensus/").json()["results"]
    before = charlie.get("/api/projects/outdoor/consensus/?until=2029-01-01T00:00:00Z").json()
    assert (now[0]["consensus"], before["results"][0]["consensus"]) == (1.0, 2.5)
    assert now[0] | {"consensus": None} == {
        "query": judged.pk,
        "document": document.pk,
        "consensus": None,
        "raters": 2,
        "min_grade": 0,
        "max_grade": 2,
        "spread": 1.0,
    }


def test_projects_show_their_scale(alice, project):
    (listed,) = alice.get("/api/projects/").json()["results"]
    assert (listed["slug"], listed["scale"][3]["label"]) == ("outdoor", "Perfect")
    assert alice.get("/api/projects/outdoor/").json() == listed


def test_a_result_list_shows_its_hits_in_rank_order(charlie, query_with_hits):
    result_list = query_with_hits.hits.first().result_list
    detail = charlie.get(f"/api/result-lists/{result_list.pk}/").json()
    assert (detail["name"], detail["hit_count"]) == ("bm25", 5)
    hits = charlie.get(f"/api/result-lists/{result_list.pk}/hits/").json()["results"]
    assert [hit["external_id"] for hit in hits] == [f"SKU-{rank}" for rank in range(1, 6)]


def test_consensus_by_majority_on_request(charlie, judged, analyst):
    # SKU-1: alice 3, bob 2, and charlie's 2 makes 2 the most frequent grade.
    document = judged.hits.get(rank=1).document
    JudgementFactory(query=judged, document=document, rater=analyst, grade=2)
    rows = charlie.get("/api/projects/outdoor/consensus/?policy=majority").json()["results"]
    quepid = charlie.get("/api/projects/outdoor/consensus/?policy=quepid").json()["results"]
    assert (rows[0]["consensus"], quepid[0]["consensus"]) == (2.0, 2.0)
    assert rows[0]["raters"] == 3


def test_the_projects_consensus_policy_is_the_default(charlie, judged, project, analyst):
    document = judged.hits.get(rank=1).document
    JudgementFactory(query=judged, document=document, rater=analyst, grade=2)
    project.consensus = "majority"
    project.save()
    rows = charlie.get("/api/projects/outdoor/consensus/").json()["results"]
    assert rows[0]["consensus"] == 2.0


def test_an_unknown_policy_is_a_field_error(charlie, judged):
    response = charlie.get("/api/projects/outdoor/consensus/?policy=mode")
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["field"] == "policy"
    assert "mode" in error["message"]
