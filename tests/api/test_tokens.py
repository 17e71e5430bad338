"""The token page: a user creates, replaces and revokes their own API token.

Keys are stored as digests only; the page that shows a new key is kept by no cache.
"""

import datetime as dt
import hashlib
import importlib
import re

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from config.api.tokens import token_create


def created_key(client) -> str:
    response = client.post("/api/token/", {"action": "create"})
    return re.search(r'<pre id="token-key">(\w+)</pre>', response.content.decode())[1]


def signed_in(key: str) -> APIClient:
    return APIClient(HTTP_AUTHORIZATION=f"Token {key}")


def test_the_token_page_needs_a_login(client):
    response = client.get("/api/token/")
    assert response.status_code == 302
    assert "/accounts/login/" in response.url


def test_a_user_creates_a_token_and_sees_it_once(client, analyst):
    client.force_login(analyst)
    assert b"You have no token." in client.get("/api/token/").content
    key = created_key(client)
    assert len(key) == 64
    page = client.get("/api/token/").content.decode()
    assert key not in page and f"<code>{key[:4]}…</code>" in page


def test_the_database_keeps_a_digest_of_the_key_not_the_key(client, analyst):
    client.force_login(analyst)
    key = created_key(client)
    (stored,) = AuthToken.objects.filter(user=analyst)
    assert stored.digest == hashlib.sha512(key.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM knox_authtoken")
        row = cursor.fetchone()
    assert key not in " ".join(map(str, row))


def test_the_page_showing_a_new_key_is_stored_by_no_cache(client, analyst):
    client.force_login(analyst)
    for response in (client.post("/api/token/", {"action": "create"}), client.get("/api/token/")):
        assert "no-store" in response["Cache-Control"]
        assert "private" in response["Cache-Control"]


def test_the_token_signs_scripts_in_as_the_user(client, rater):
    client.force_login(rater)
    script = signed_in(created_key(client))
    assert script.get("/api/judgements/").status_code == 200
    assert script.get("/api/projects/outdoor/grades/").status_code == 403


def test_a_wrong_key_with_the_right_prefix_is_refused(client, rater):
    client.force_login(rater)
    key = created_key(client)
    forged = key[:15] + "0" * (len(key) - 15)
    assert signed_in(forged).get("/api/judgements/").status_code == 401


def test_a_new_token_replaces_the_old_one(client, rater):
    client.force_login(rater)
    old = created_key(client)
    new = created_key(client)
    assert signed_in(old).get("/api/judgements/").status_code == 401
    assert signed_in(new).get("/api/judgements/").status_code == 200


def test_a_revoked_token_stops_working(client, rater):
    client.force_login(rater)
    key = created_key(client)
    client.post("/api/token/", {"action": "revoke"})
    assert not AuthToken.objects.filter(user=rater).exists()
    assert signed_in(key).get("/api/judgements/").status_code == 401


def test_the_page_posts_need_the_csrf_token(rater):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(rater)
    assert client.post("/api/token/", {"action": "create"}).status_code == 403


def test_a_token_created_before_hashing_keeps_working_and_leaves_no_clear_key(rater, analyst):
    # The table DRF's authtoken kept, with keys in clear, as an existing database has it.
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamptz NOT NULL, user_id integer NOT NULL UNIQUE)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, now() - interval '1 day', %s)",
            [old_key, rater.pk],
        )
    token_create(user=analyst)
    migration = importlib.import_module("judgements.migrations.0014_hashed_api_tokens")
    with connection.cursor() as cursor:
        cursor.execute(migration.MOVE_TOKENS)
        cursor.execute("SELECT to_regclass('authtoken_token')")
        assert cursor.fetchone() == (None,)
    assert signed_in(old_key).get("/api/judgements/").status_code == 200
    assert AuthToken.objects.get(user=rater).token_key == old_key[:15]
    assert AuthToken.objects.filter(user=analyst).count() == 1


def test_a_token_that_never_expires_is_read_once_per_call_and_an_expired_one_is_refused(
    analyst,
):
    key = token_create(user=analyst)
    with CaptureQueriesContext(connection) as queries:
        assert signed_in(key).get("/api/projects/").status_code == 200
    token_reads = [query for query in queries if "knox_authtoken" in query["sql"]]
    assert len(token_reads) == 1
    # A token made with an expiry (knox's own default) is still swept once past it.
    _, expired = AuthToken.objects.create(user=analyst, expiry=dt.timedelta(seconds=-1))
    assert signed_in(expired).get("/api/projects/").status_code == 401
    assert AuthToken.objects.filter(user=analyst, expiry__lt=timezone.now()).count() == 0
