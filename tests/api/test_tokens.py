"""The token page: a user creates, replaces and revokes their own API token."""

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def test_the_token_page_needs_a_login(client):
    response = client.get("/api/token/")
    assert response.status_code == 302
    assert "/accounts/login/" in response.url


def test_a_user_creates_a_token_and_sees_it_once(client, analyst):
    client.force_login(analyst)
    assert b"You have no token." in client.get("/api/token/").content
    created = client.post("/api/token/", {"action": "create"})
    key = Token.objects.get(user=analyst).key
    assert key.encode() in created.content
    assert key.encode() not in client.get("/api/token/").content


def test_the_token_signs_scripts_in_as_the_user(client, rater):
    client.force_login(rater)
    client.post("/api/token/", {"action": "create"})
    script = APIClient(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=rater).key}")
    assert script.get("/api/judgements/").status_code == 200
    assert script.get("/api/projects/outdoor/grades/").status_code == 403


def test_a_new_token_replaces_the_old_one(client, rater):
    client.force_login(rater)
    client.post("/api/token/", {"action": "create"})
    old = Token.objects.get(user=rater).key
    client.post("/api/token/", {"action": "create"})
    assert APIClient(HTTP_AUTHORIZATION=f"Token {old}").get("/api/judgements/").status_code == 401


def test_a_revoked_token_stops_working(client, rater):
    client.force_login(rater)
    client.post("/api/token/", {"action": "create"})
    key = Token.objects.get(user=rater).key
    client.post("/api/token/", {"action": "revoke"})
    assert not Token.objects.filter(user=rater).exists()
    assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/judgements/").status_code == 401


def test_the_page_posts_need_the_csrf_token(rater):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(rater)
    assert client.post("/api/token/", {"action": "create"}).status_code == 403
