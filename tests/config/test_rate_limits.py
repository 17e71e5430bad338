"""Rate limits hold across gunicorn's workers, and a client cannot rename itself.

Served as docker-compose.yml serves the app (gunicorn, DEBUG off, on 127.0.0.1) with
four workers and an anonymous limit of 60 an hour: 240 requests at once let exactly
60 through (the burst a limit allows), whichever worker takes them, and a new
X-Forwarded-For on each request changes nothing unless a trusted proxy wrote it. The
limits are per hour so that no request is allowed back while the test runs (a limit
of 60 a minute allows one more each second after a burst).
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from config.api import throttles
from config.api.throttles import rate_limits_clear
from config.api.tokens import token_create
from tests.config.test_production import serving, static_root

__all__ = ["static_root"]  # a fixture, used by name
LIMIT = 60


def statuses(base: str, headers_for, count: int) -> list[int]:
    """Send ``count`` anonymous requests from 24 threads at once; their statuses."""
    threads = min(24, count)
    barrier = threading.Barrier(threads)

    def send(number: int) -> int:
        if number < threads:
            barrier.wait()
        request = Request(f"{base}/api/projects/", headers=headers_for(number))
        try:
            with urlopen(request, timeout=60) as response:
                return response.status
        except HTTPError as error:
            return error.code

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(send, range(count)))


@pytest.fixture
def limits_reset(transactional_db):
    rate_limits_clear()
    yield
    rate_limits_clear()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_four_workers_let_exactly_the_limit_through(static_root, limits_reset):
    with serving(static_root, workers=4, API_THROTTLE_ANON=f"{LIMIT}/hour") as base:
        answered = statuses(base, lambda number: {}, 240)
        # A new address in X-Forwarded-For on every request: the client's own words.
        spoofed = statuses(base, lambda number: {"X-Forwarded-For": f"192.0.2.{number}"}, 60)
    assert answered.count(401) == LIMIT, answered
    assert answered.count(429) == 240 - LIMIT
    assert set(spoofed) == {429}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_behind_a_trusted_proxy_each_client_has_its_own_limit(static_root, limits_reset):
    environment = {"API_THROTTLE_ANON": "5/hour", "TRUSTED_PROXIES": "1"}
    with serving(static_root, workers=2, **environment) as base:
        # The proxy appends the address it saw; what the client wrote before it is ignored.
        mallory = statuses(base, lambda n: {"X-Forwarded-For": f"192.0.2.{n}, 198.51.100.7"}, 10)
        alice = statuses(base, lambda n: {"X-Forwarded-For": "198.51.100.8"}, 10)
    assert sorted(mallory) == [401] * 5 + [429] * 5
    assert sorted(alice) == [401] * 5 + [429] * 5


def _tat(key: str) -> float | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tat FROM api_rate_limit WHERE key = %s", [key])
        row = cursor.fetchone()
    return row[0] if row else None


def _rate_statements(queries) -> list[str]:
    return [query["sql"] for query in queries if "api_rate_limit" in query["sql"]]


@pytest.mark.django_db
def test_a_check_is_one_statement_and_a_refusal_says_when_to_retry(settings, analyst):
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": {"anon": "60/minute", "token": "3/minute"}
    }
    rate_limits_clear()
    script = APIClient(HTTP_AUTHORIZATION=f"Token {token_create(user=analyst)}")
    with CaptureQueriesContext(connection) as allowed:
        assert script.get("/api/projects/").status_code == 200
    assert len(_rate_statements(allowed.captured_queries)) == 1
    assert [script.get("/api/projects/").status_code for _ in range(2)] == [200, 200]
    with CaptureQueriesContext(connection) as refused:
        response = script.get("/api/projects/")
    assert response.status_code == 429
    # A refused request leaves the state alone; a second statement reads when to retry:
    # the burst of 3 spent, one request is allowed back after 60 / 3 = 20 s.
    assert len(_rate_statements(refused.captured_queries)) == 2
    assert abs(_tat(f"throttle_token_{analyst.pk}") - time.time() - 60) < 5
    assert 15 <= int(response["Retry-After"]) <= 20


@pytest.mark.django_db
def test_a_spent_burst_comes_back_at_the_rate_and_idle_rows_are_pruned(
    settings, analyst, monkeypatch
):
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": {"anon": "60/minute", "token": "3/minute"}
    }
    rate_limits_clear()
    key = f"throttle_token_{analyst.pk}"
    script = APIClient(HTTP_AUTHORIZATION=f"Token {token_create(user=analyst)}")
    # The burst was spent 25 s ago: one request (one per 20 s) is allowed again.
    spent = time.time() + 60 - 25
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO api_rate_limit VALUES (%s, %s, now() + '1 minute'::interval), "
            "('idle', 1, now() - '1s'::interval)",
            [key, spent],
        )
    monkeypatch.setattr(throttles, "PRUNE_ONE_IN", 1)
    assert [script.get("/api/projects/").status_code for _ in range(2)] == [200, 429]
    assert _tat(key) == pytest.approx(spent + 20)
    assert _tat("idle") is None
