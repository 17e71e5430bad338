"""Rate limits hold across gunicorn's workers, and a client cannot rename itself.

Served as docker-compose.yml serves the app (gunicorn, DEBUG off, on 127.0.0.1) with
four workers and an anonymous limit of 60 a minute: 240 requests at once let exactly
60 through, whichever worker takes them, and a new X-Forwarded-For on each request
changes nothing unless a trusted proxy wrote it.
"""

import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest
from django.core.cache import caches

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
    caches["shared"].clear()
    yield
    caches["shared"].clear()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_four_workers_let_exactly_the_limit_through(static_root, limits_reset):
    with serving(static_root, workers=4, API_THROTTLE_ANON=f"{LIMIT}/minute") as base:
        answered = statuses(base, lambda number: {}, 240)
        # A new address in X-Forwarded-For on every request: the client's own words.
        spoofed = statuses(base, lambda number: {"X-Forwarded-For": f"192.0.2.{number}"}, 60)
    assert answered.count(401) == LIMIT, answered
    assert answered.count(429) == 240 - LIMIT
    assert set(spoofed) == {429}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_behind_a_trusted_proxy_each_client_has_its_own_limit(static_root, limits_reset):
    environment = {"API_THROTTLE_ANON": "5/minute", "TRUSTED_PROXIES": "1"}
    with serving(static_root, workers=2, **environment) as base:
        # The proxy appends the address it saw; what the client wrote before it is ignored.
        mallory = statuses(base, lambda n: {"X-Forwarded-For": f"192.0.2.{n}, 198.51.100.7"}, 10)
        alice = statuses(base, lambda n: {"X-Forwarded-For": "198.51.100.8"}, 10)
    assert sorted(mallory) == [401] * 5 + [429] * 5
    assert sorted(alice) == [401] * 5 + [429] * 5
