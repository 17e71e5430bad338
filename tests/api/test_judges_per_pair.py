"""POST /api/judgements/create/ keeps the queue's rule: a pair takes judges_per_pair grades.

alice, bob and carl are raters; the project wants one grade per pair unless a test
says otherwise. A rater may always change or retract their own answer.
"""

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from config.api.tokens import token_create
from judgements.models import Judgement
from tests.api.test_concurrency import connected
from tests.factories import UserFactory

CREATE = "/api/judgements/create/"


@pytest.fixture
def carl(db):
    return UserFactory(username="carl", roles=["rater"])


@pytest.fixture
def pair(query_with_hits) -> dict:
    document = query_with_hits.hits.get(rank=1).document
    return {"query": query_with_hits.pk, "document": document.pk}


def test_a_pair_with_its_grades_refuses_another_raters_grade(client_as, rater, other_rater, pair):
    assert client_as(rater).post(CREATE, pair | {"grade": 2}).status_code == 201
    refused = client_as(other_rater).post(CREATE, pair | {"grade": 0})
    assert refused.status_code == 409
    assert "already has the 1 grade(s) it needs" in refused.json()["errors"][0]["message"]
    assert list(Judgement.objects.values_list("rater__username", "grade")) == [("alice", 2)]


def test_a_rater_may_change_and_retract_their_own_answer_on_a_complete_pair(
    client_as, rater, pair
):
    alice = client_as(rater)
    assert alice.post(CREATE, pair | {"grade": 2}).status_code == 201
    assert alice.post(CREATE, pair | {"grade": 3}).status_code == 201
    assert alice.post(CREATE, pair | {"kind": "retract"}).status_code == 201
    assert Judgement.objects.count() == 3


def test_cant_tell_takes_no_slot(client_as, rater, other_rater, pair):
    assert client_as(rater).post(CREATE, pair | {"kind": "cant_tell"}).status_code == 201
    assert client_as(other_rater).post(CREATE, pair | {"grade": 1}).status_code == 201


def test_a_pair_takes_as_many_grades_as_the_project_asks(
    client_as, rater, other_rater, carl, pair, project
):
    project.judges_per_pair = 2
    project.save()
    assert client_as(rater).post(CREATE, pair | {"grade": 2}).status_code == 201
    assert client_as(other_rater).post(CREATE, pair | {"grade": 1}).status_code == 201
    assert client_as(carl).post(CREATE, pair | {"grade": 0}).status_code == 409


def test_another_raters_live_lease_on_the_last_slot_counts_as_the_queue_counts_it(
    client_as, rater, other_rater, pair
):
    bob = client_as(other_rater)
    leased = bob.get("/api/projects/outdoor/next/").json()
    assert (leased["query"]["id"], leased["document"]["id"]) == (pair["query"], pair["document"])
    assert client_as(rater).post(CREATE, pair | {"grade": 2}).status_code == 409
    assert bob.post(CREATE, pair | {"grade": 2}).status_code == 201


def test_a_pair_ranked_below_the_pool_keeps_the_rule_too(
    client_as, rater, other_rater, query_with_hits, project
):
    project.pool_depth = 2
    project.save()
    deep = {"query": query_with_hits.pk, "document": query_with_hits.hits.get(rank=5).document_id}
    assert client_as(rater).post(CREATE, deep | {"grade": 1}).status_code == 201
    assert client_as(other_rater).post(CREATE, deep | {"grade": 1}).status_code == 409
    assert client_as(rater).post(CREATE, deep | {"grade": 2}).status_code == 201


@pytest.mark.parametrize("pool_depth", [10, 2])
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_raters_posting_the_same_pair_at_once_fill_exactly_its_slots(
    live_server, query_with_hits, project, pool_depth
):
    project.judges_per_pair, project.pool_depth = 3, pool_depth
    project.save()
    raters = [UserFactory(username=f"racer{n}", roles=["rater"]) for n in range(8)]
    tokens = [token_create(user=rater) for rater in raters]
    document = query_with_hits.hits.get(rank=5).document
    body = {"query": query_with_hits.pk, "document": document.pk, "grade": 1}
    connections = [connected(live_server.url) for _ in raters]
    barrier = threading.Barrier(len(raters))

    def client(number: int) -> int:
        headers = {"Authorization": f"Token {tokens[number]}", "Content-Type": "application/json"}
        barrier.wait()
        connections[number].request("POST", CREATE, json.dumps(body), headers)
        response = connections[number].getresponse()
        response.read()
        return response.status

    with ThreadPoolExecutor(max_workers=len(raters)) as pool:
        statuses = sorted(pool.map(client, range(len(raters))))
    for connection in connections:
        connection.close()
    assert statuses == [201] * 3 + [409] * 5
    assert Judgement.objects.filter(document=document).count() == 3
