"""Fifty clients posting grades at once, over HTTP, on real PostgreSQL."""

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest

from config.api.tokens import token_create
from judgements.models import Judgement
from tests.factories import UserFactory

CLIENTS = 50


def connected(url: str) -> http.client.HTTPConnection:
    # Connecting one after another keeps within the test server's short listen
    # backlog; the posts themselves then go out at the same moment.
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    connection.connect()
    return connection


def post_grade(connection, token: str, body: dict, barrier: threading.Barrier):
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    barrier.wait()
    connection.request("POST", "/api/judgements/create/", json.dumps(body), headers)
    response = connection.getresponse()
    return response.status, json.loads(response.read())["id"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_fifty_clients_posting_at_once_store_every_event_exactly_once(
    live_server, query_with_hits
):
    # Every client's grade has a slot: ten raters on each of the five pairs.
    query_with_hits.project.judges_per_pair = CLIENTS
    query_with_hits.project.save()
    raters = [UserFactory(username=f"machine{n:02d}", roles=["rater"]) for n in range(CLIENTS)]
    tokens = [token_create(user=rater) for rater in raters]
    documents = [hit.document for hit in query_with_hits.hits.order_by("rank")]
    connections = [connected(live_server.url) for _ in range(CLIENTS)]
    barrier = threading.Barrier(CLIENTS)

    def client(number: int) -> tuple[int, int]:
        body = {
            "query": query_with_hits.pk,
            "document": documents[number % len(documents)].pk,
            "grade": number % 4,
            "note": f"client {number}",
        }
        return post_grade(connections[number], tokens[number], body, barrier)

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        results = list(pool.map(client, range(CLIENTS)))
    for connection in connections:
        connection.close()

    assert {status for status, _ in results} == {201}
    stored = Judgement.objects.filter(source="api")
    assert sorted(stored.values_list("id", flat=True)) == sorted(id for _, id in results)
    assert sorted(stored.values_list("note", "rater__username", "grade")) == sorted(
        (f"client {n}", f"machine{n:02d}", n % 4) for n in range(CLIENTS)
    )
