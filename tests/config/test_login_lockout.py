"""Login brute-force protection (django-axes): wrong passwords lock out a username at an
address, before any password is hashed; a success or the cool-off lifts it.

alice (rater) is the target; mallory is whoever guesses her password.
"""

import datetime as dt

import pytest
from django.conf import settings
from django.test import Client

LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"


def attempt(client: Client, username: str, password: str, path: str = LOGIN):
    return client.post(path, {"username": username, "password": password})


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def from_address(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


@pytest.fixture
def alice(rater):
    rater.set_password("correct horse")
    rater.save()
    return rater


def fail_to_the_limit(client: Client, username: str = "alice", path: str = LOGIN) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(client, username, "wrong", path).status_code == 200
    # The failure that reaches the limit is answered with the lockout.
    assert attempt(client, username, "wrong", path).status_code == 429


def test_the_limit_of_wrong_passwords_locks_out_even_the_right_one(alice):
    mallory = from_address("203.0.113.5")
    fail_to_the_limit(mallory)
    locked = attempt(mallory, "alice", "correct horse")
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "paused for 15 minutes" in locked.content.decode()
    assert not signed_in(mallory)


def test_fewer_failures_than_the_limit_do_not_lock(alice):
    client = from_address("203.0.113.5")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "alice", "wrong")
    assert attempt(client, "alice", "correct horse").status_code == 302
    assert signed_in(client)


def test_the_lockout_is_per_username_and_address(alice, other_rater):
    other_rater.set_password("bobs password")
    other_rater.save()
    fail_to_the_limit(from_address("203.0.113.5"))
    # alice from her own address, and bob from mallory's, still sign in.
    alice_at_home = from_address("198.51.100.20")
    assert attempt(alice_at_home, "alice", "correct horse").status_code == 302
    bob = from_address("203.0.113.5")
    assert attempt(bob, "bob", "bobs password").status_code == 302


def test_a_success_resets_the_count(alice):
    client = from_address("203.0.113.5")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "alice", "wrong")
    assert attempt(client, "alice", "correct horse").status_code == 302
    again = from_address("203.0.113.5")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(again, "alice", "wrong")
    assert attempt(again, "alice", "correct horse").status_code == 302


def test_the_lockout_ends_after_the_cool_off(alice, time_machine):
    time_machine.move_to(dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC))
    mallory = from_address("203.0.113.5")
    fail_to_the_limit(mallory)
    time_machine.move_to(dt.datetime(2026, 11, 20, 9, 14, tzinfo=dt.UTC))
    assert attempt(mallory, "alice", "correct horse").status_code == 429
    # An attempt during the lockout starts the cool-off again.
    time_machine.move_to(dt.datetime(2026, 11, 20, 9, 28, tzinfo=dt.UTC))
    assert attempt(mallory, "alice", "correct horse").status_code == 429
    time_machine.move_to(dt.datetime(2026, 11, 20, 9, 44, tzinfo=dt.UTC))
    assert attempt(mallory, "alice", "correct horse").status_code == 302


def test_the_admin_login_counts_and_locks_the_same_way(alice):
    alice.is_staff = True
    alice.save()
    mallory = from_address("203.0.113.5")
    fail_to_the_limit(mallory, path=ADMIN_LOGIN)
    assert attempt(mallory, "alice", "correct horse", LOGIN).status_code == 429


def test_a_locked_out_client_cannot_reach_the_token_page(alice):
    # API tokens are made on a page behind the login: the lockout keeps it shut.
    mallory = from_address("203.0.113.5")
    fail_to_the_limit(mallory)
    attempt(mallory, "alice", "correct horse")
    response = mallory.post("/api/token/", {"action": "create"})
    assert response.status_code == 302 and response.url.startswith(LOGIN)


def test_an_address_written_into_x_forwarded_for_does_not_escape_the_lockout(alice):
    # No trusted proxy: the header is the client's own words, and is ignored.
    mallory = from_address("203.0.113.5")
    for number in range(settings.AXES_FAILURE_LIMIT):
        mallory.post(
            LOGIN,
            {"username": "alice", "password": "wrong"},
            HTTP_X_FORWARDED_FOR=f"192.0.2.{number}",
        )
    locked = mallory.post(
        LOGIN,
        {"username": "alice", "password": "correct horse"},
        HTTP_X_FORWARDED_FOR="192.0.2.200",
    )
    assert locked.status_code == 429


def test_behind_a_trusted_proxy_the_proxys_client_address_counts(alice, settings):
    settings.TRUSTED_PROXIES = 1
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {"NUM_PROXIES": 1}
    proxy = from_address("10.1.1.1")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        proxy.post(
            LOGIN, {"username": "alice", "password": "wrong"}, HTTP_X_FORWARDED_FOR="203.0.113.5"
        )
    right = {"username": "alice", "password": "correct horse"}
    # mallory, behind the proxy, is locked out; alice behind the same proxy is not.
    mallory = proxy.post(LOGIN, right, HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.5")
    assert mallory.status_code == 429
    alice_client = from_address("10.1.1.1")
    response = alice_client.post(LOGIN, right, HTTP_X_FORWARDED_FOR="198.51.100.20")
    assert response.status_code == 302
