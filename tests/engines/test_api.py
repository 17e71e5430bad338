"""The engines' API: endpoints (secrets write-only), captures and tries (202, then poll),
keeping and deleting, schedules and one query live. Analysts only."""

import json

import pytest
from rest_framework.test import APIClient

from judgements.models import Capture, ResultList, SearchEndpoint
from tests.engines.conftest import MULTI_MATCH, cranfield_project, make_endpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(analyst):
    client = APIClient()
    client.force_authenticate(analyst)
    return client


@pytest.fixture
def project(analyst):
    return cranfield_project(analyst, queries=12)


@pytest.fixture
def post(api, django_capture_on_commit_callbacks):
    def post(url, data):
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(url, data, format="json")

    return post


def test_raters_get_403(project, rater, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst)
    client = APIClient()
    client.force_authenticate(rater)
    assert client.get(f"/api/projects/{project.slug}/endpoints/").status_code == 403
    assert client.post(f"/api/endpoints/{endpoint.pk}/captures/", {}).status_code == 403


def test_an_endpoint_is_created_with_a_secret_that_is_never_answered(api, project, elastic):
    data = {
        "name": "prod",
        "kind": "opensearch",
        "base_url": elastic.url,
        "index": "cranfield",
        "auth": "bearer",
        "secret": "t0ken-value",
        "template": json.dumps(MULTI_MATCH),
    }

    response = api.post(f"/api/projects/{project.slug}/endpoints/", data, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["has_secret"] is True and "secret" not in body and "template" not in body
    listed = api.get(f"/api/projects/{project.slug}/endpoints/").content.decode()
    assert "t0ken-value" not in listed
    assert SearchEndpoint.objects.get().template.version == 1


def test_a_bad_template_is_a_400_naming_the_field(api, project, elastic):
    data = {"name": "x", "kind": "solr", "base_url": elastic.url, "index": "c", "template": "{"}

    response = api.post(f"/api/projects/{project.slug}/endpoints/", data, format="json")

    assert response.status_code == 400
    assert "template" in response.content.decode()
    assert "not valid JSON" in response.content.decode()
    assert not SearchEndpoint.objects.exists()


def test_a_capture_answers_202_and_its_outcome_is_polled(api, post, project, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst)

    response = post(f"/api/endpoints/{endpoint.pk}/captures/", {"name": "api-run"})

    assert response.status_code == 202
    body = api.get(response["Location"]).json()
    assert body["status"] == "done" and body["kind"] == "manual" and body["failed"] == 0
    assert ResultList.objects.get(pk=body["result_list"]).name == "api-run"


def test_a_failed_capture_says_why_in_the_api(api, post, project, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst, index="nope")

    body = api.get(post(f"/api/endpoints/{endpoint.pk}/captures/", {})["Location"]).json()

    assert body["status"] == "failed" and body["result_list"] is None
    assert body["error"] == "HTTP 404: index_not_found_exception: no such index [nope]"


def test_a_try_reports_its_ndcg_and_the_gate_against_a_baseline(
    api, post, project, elastic, analyst
):
    endpoint = make_endpoint(project, elastic, analyst)
    baseline = api.get(post(f"/api/endpoints/{endpoint.pk}/captures/", {})["Location"]).json()
    titles = json.dumps({"query": {"match": {"title": "{{query}}"}}})

    response = post(
        f"/api/endpoints/{endpoint.pk}/captures/",
        {"kind": "try", "template": titles, "baseline": baseline["result_list"]},
    )
    body = api.get(response["Location"] + "?max_drop=0").json()

    report = body["report"]
    assert body["result_list"] is None and body["version"] == 2
    assert report["queries_in_common"] > 0 and report["unjudged"] >= 0
    assert report["difference"] == pytest.approx(
        report["mean_in_common"] - report["baseline_mean"]
    )
    assert body["gate"]["passed"] is (report["difference"] >= -1e-9)
    assert body["gate"]["reason"].startswith("Mean NDCG@10")
    assert len(report["per_query"]) == report["queries"]


def test_a_gate_candidate_is_replaced_by_name_and_deleted_in_one_call(
    api, post, project, elastic, analyst
):
    endpoint = make_endpoint(project, elastic, analyst)
    url = f"/api/endpoints/{endpoint.pk}/captures/"
    first = post(url, {"kind": "gate", "name": "ci-abc", "judge": False})
    again = post(url, {"kind": "gate", "name": "ci-abc", "replace": True})

    assert again.status_code == 202
    assert list(Capture.objects.filter(kind="gate").values_list("pk", flat=True)) == [
        again.json()["id"]
    ]
    assert api.get(first["Location"]).status_code == 404

    kept = api.post(again["Location"] + "keep/", {"name": "ci-abc"}, format="json")
    assert kept.status_code == 201 and ResultList.objects.filter(name="ci-abc").exists()

    assert api.delete(again["Location"]).status_code == 204
    assert not Capture.objects.exists() and not ResultList.objects.filter(name="ci-abc").exists()


def test_schedules_are_created_and_paused_through_the_api(api, project, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst)

    created = api.post(
        f"/api/endpoints/{endpoint.pk}/schedules/", {"every": "weekly"}, format="json"
    )
    assert created.status_code == 201 and created.json()["expression"] == "0 3 * * 1"
    paused = api.patch(f"/api/schedules/{created.json()['id']}/", {"paused": True}, format="json")

    assert paused.json()["paused"] is True and paused.json()["next_run_at"] is None
    bad = api.post(
        f"/api/endpoints/{endpoint.pk}/schedules/", {"expression": "every day"}, format="json"
    )
    assert bad.status_code == 400 and "is not a cron expression" in bad.content.decode()


def test_one_query_live_through_the_api(api, project, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst)

    body = api.get(f"/api/endpoints/{endpoint.pk}/live/?query=1").json()

    assert len(body["live"]) == 10 and body["error"] == ""
    assert all(set(hit) >= {"rank", "id", "grade", "judged"} for hit in body["live"])
    judged = [hit for hit in body["live"] if hit["judged"]]
    assert all(hit["grade"] is not None for hit in judged)
    failing = make_endpoint(project, elastic, analyst, name="nope", index="nope")
    response = api.get(f"/api/endpoints/{failing.pk}/live/?query=1")
    assert response.status_code == 502 and "no such index [nope]" in response.json()["error"]
