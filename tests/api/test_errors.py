"""One error shape for every 4xx, and the limits on anonymous and token clients."""

import pytest
from rest_framework.test import APIClient

from config.api.tokens import token_create


def test_an_unknown_api_path_is_a_json_404(client_as, analyst):
    response = client_as(analyst).get("/api/nothing-here/")
    assert response.status_code == 404
    assert response.json() == {
        "errors": [
            {"field": None, "line": None, "message": "No API endpoint at /api/nothing-here/."}
        ]
    }


def test_an_unknown_project_is_a_404_in_the_same_shape(client_as, analyst):
    response = client_as(analyst).get("/api/projects/nowhere/queries/")
    assert response.status_code == 404
    assert response.json()["errors"][0]["message"] == "No Project matches the given query."


# Anonymous requests count against the rate limit, kept in the database's shared cache.
@pytest.mark.django_db
def test_anonymous_requests_are_told_how_to_sign_in(client_as):
    response = client_as(None).get("/api/judgements/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["errors"][0]["field"] is None


def test_a_wrong_method_is_a_405_in_the_same_shape(client_as, analyst):
    response = client_as(analyst).delete("/api/judgements/")
    assert response.status_code == 405
    assert response.json()["errors"][0]["message"] == 'Method "DELETE" not allowed.'


def test_malformed_json_is_a_400_in_the_same_shape(client_as, rater):
    response = client_as(rater).post(
        "/api/judgements/create/", "{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"].startswith("JSON parse error")


@pytest.mark.django_db
def test_anonymous_clients_are_throttled(settings):
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": {"anon": "2/minute", "token": "2/minute"}
    }
    client = APIClient()
    statuses = [client.get("/api/projects/").status_code for _ in range(3)]
    assert statuses == [401, 401, 429]
    response = client.get("/api/projects/")
    assert int(response["Retry-After"]) > 0
    assert "throttled" in response.json()["errors"][0]["message"]


@pytest.mark.django_db
def test_token_clients_are_throttled_and_browser_sessions_are_not(settings, analyst):
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": {"anon": "2/minute", "token": "2/minute"}
    }
    script = APIClient(HTTP_AUTHORIZATION=f"Token {token_create(user=analyst)}")
    assert [script.get("/api/projects/").status_code for _ in range(3)] == [200, 200, 429]
    browser = APIClient()
    browser.force_login(analyst)
    assert {browser.get("/api/projects/").status_code for _ in range(3)} == {200}
