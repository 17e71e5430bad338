"""Projects through the API: create, read, update, delete (a job); jobs; large uploads.

charlie (analyst) creates, changes and deletes projects; alice (rater) only reads the
projects she may rate (tests/api/test_role_matrix.py has every role and operation).
"""

import pytest
from django.urls import reverse

from judgements.models import Job, JobUpload, Project
from judgements.projects import metric_default_fields
from tests.api.conftest import row_counts, upload
from tests.api.test_malformed_uploads import big_documents
from tests.factories import JudgementFactory
from tests.judgements.forms import project_form_data

pytestmark = pytest.mark.django_db

SCALE = [
    {"value": -1, "label": "Harmful", "description": "Misleads the searcher."},
    {"value": 0, "label": "Irrelevant", "description": ""},
    {"value": 1, "label": "Relevant", "description": ""},
]


def test_an_analyst_creates_a_project_with_every_setting(client_as, analyst):
    body = {
        "name": "Shop search",
        "scale": SCALE,
        "guidelines": "# Grade the product",
        "judges_per_pair": 3,
        "pool_depth": 20,
        "consensus": "median",
        "metric_k": 5,
        "metric_gain": "linear",
        "metric_unjudged": "remove",
    }
    response = client_as(analyst).post("/api/projects/", body, format="json")
    assert response.status_code == 201, response.json()
    project = Project.objects.get()
    assert response.json()["slug"] == project.slug == "shop-search"
    assert project.scale == SCALE and project.judges_per_pair == 3
    assert (project.metric_k, project.metric_gain, project.consensus) == (5, "linear", "median")
    assert response.json()["metric_unjudged"] == "remove"


def test_the_api_shows_every_metric_default(client_as, analyst, project):
    body = client_as(analyst).get(f"/api/projects/{project.slug}/").json()
    assert set(metric_default_fields()) <= set(body)
    assert metric_default_fields()[:2] == ["metric_k", "metric_gain"]
    assert "consensus" in metric_default_fields()


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        ([{"value": 0, "label": "No"}], "at least two grades"),
        ([{"value": 1, "label": "A"}, {"value": 0, "label": "B"}], "lowest first"),
        ([{"value": 0, "label": "A"}, {"value": 0, "label": "B"}], "distinct"),
        ([{"value": 0, "label": "A"}, {"value": 1, "label": " "}], "needs a label"),
        ([{"value": 0, "label": "A"}, {"value": "1", "label": "B"}], "integer value"),
        ([{"value": 0, "label": "A"}, {"value": 1.5, "label": "B"}], "integer value"),
        ([{"value": 0, "label": "A"}, {"value": 101, "label": "B"}], "outside -100 to 100"),
        ([{"value": 0, "label": "A"}, {"value": 1, "label": "B", "gain": 2}], "unknown keys"),
        ("0-3", "at least two grades"),
    ],
)
def test_the_api_and_the_settings_page_refuse_a_bad_scale_alike(
    client, client_as, analyst, project, scale, message
):
    api = client_as(analyst).patch(f"/api/projects/{project.slug}/", {"scale": scale}, "json")
    assert api.status_code == 400
    errors = api.json()["errors"]
    assert any(error["field"] == "scale" and message in error["message"] for error in errors)
    if isinstance(scale, list) and all(
        isinstance(step["value"], int) and set(step) <= {"value", "label"} for step in scale
    ):
        # The same scale through the page's form: the same message, from the same check.
        client.force_login(analyst)
        page = client.post(
            reverse("judgements:project_settings", args=[project.slug]),
            project_form_data(project, scale=scale),
        )
        assert page.status_code == 400
        assert message in " ".join(page.context["form"].errors["scale"])
    project.refresh_from_db()
    assert project.grade_values == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"judges_per_pair": 0}, "judges_per_pair"),
        ({"judges_per_pair": 101}, "judges_per_pair"),
        ({"pool_depth": 1001}, "pool_depth"),
        ({"metric_k": 0}, "metric_k"),
        ({"metric_gain": "cubic"}, "metric_gain"),
        ({"consensus": "loudest"}, "consensus"),
        ({"slug": "other"}, "slug"),
    ],
)
def test_a_bad_setting_is_a_400_naming_its_field(client_as, analyst, project, change, field):
    response = client_as(analyst).patch(f"/api/projects/{project.slug}/", change, format="json")
    assert response.status_code == 400
    assert field in {error["field"] for error in response.json()["errors"]}
    assert Project.objects.get(pk=project.pk).slug == "outdoor"


def test_a_reserved_or_taken_slug_is_refused(client_as, analyst, project):
    client = client_as(analyst)
    for slug in ("new", "outdoor"):
        body = {"name": "X", "slug": slug}
        response = client.post("/api/projects/", body, format="json")
        assert response.status_code == 400
        assert response.json()["errors"][0]["field"] == "slug"


def test_a_grade_in_use_cannot_be_dropped_from_the_scale(client_as, analyst, query_with_hits):
    project = query_with_hits.project
    document = query_with_hits.hits.first().document
    for _ in range(2):
        JudgementFactory(query=query_with_hits, document=document, grade=3)
    scale = project.scale[:3]
    response = client_as(analyst).patch(f"/api/projects/{project.slug}/", {"scale": scale}, "json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {
            "field": "scale",
            "line": None,
            "message": "Grade 3 (Perfect) cannot be removed: 2 grades in the log use it.",
        }
    ]
    # Relabelling a grade in use, and dropping one nobody used, are fine.
    relabelled = [*project.scale[1:3], {**project.scale[3], "label": "Exact"}]
    response = client_as(analyst).patch(
        f"/api/projects/{project.slug}/", {"scale": relabelled}, "json"
    )
    assert response.status_code == 200, response.json()
    assert Project.objects.get(pk=project.pk).grade_values == [1, 2, 3]


def test_deleting_a_project_answers_202_with_a_job_that_runs_to_its_end(
    client_as, analyst, query_with_hits, django_capture_on_commit_callbacks
):
    project = query_with_hits.project
    client = client_as(analyst)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.delete(f"/api/projects/{project.slug}/")
    assert response.status_code == 202
    job = response.json()
    assert response["Location"] == job["url"] == f"/api/jobs/{job['id']}/"
    assert (job["kind"], job["project"]) == ("delete_project", "outdoor")
    assert not Project.objects.exists()
    done = client.get(job["url"]).json()
    assert (done["status"], done["project"], done["percent"]) == ("done", None, 100)
    assert done["result"] == {"deleted": "Outdoor gear"}


def test_a_second_delete_while_the_first_runs_returns_the_same_job(client_as, analyst, project):
    client = client_as(analyst)
    first = client.delete(f"/api/projects/{project.slug}/").json()
    second = client.delete(f"/api/projects/{project.slug}/").json()
    assert first["id"] == second["id"]
    assert Job.objects.count() == 1


def test_a_project_being_deleted_leaves_the_list_but_keeps_its_address(
    client_as, analyst, project
):
    other = Project.objects.create(name="Other", slug="other")
    client = client_as(analyst)
    client.delete(f"/api/projects/{project.slug}/")
    # Running: the job has let go of its project row (judgements.jobs._delete_project).
    Job.objects.update(status=Job.Status.RUNNING, project=None)
    listed = client.get("/api/projects/").json()["results"]
    assert [item["slug"] for item in listed] == [other.slug]
    assert client.get(f"/api/projects/{project.slug}/").status_code == 200


def test_a_large_upload_is_a_job_whose_errors_are_the_requests_errors(
    client_as, analyst, query_with_hits, settings, django_capture_on_commit_callbacks
):
    content = big_documents()  # about 50 MB, broken on its last line
    client = client_as(analyst)
    before = row_counts()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/projects/outdoor/documents/import/",
            {"file": upload(content, "documents.jsonl")},
            format="multipart",
        )
    assert response.status_code == 202
    job = client.get(response.json()["url"]).json()
    assert (job["status"], job["total"], job["label"]) == (
        "failed",
        len(content),
        "documents.jsonl",
    )
    settings.UPLOAD_BACKGROUND_BYTES = 1 << 30
    in_request = client.post(
        "/api/projects/outdoor/documents/import/",
        {"file": upload(content, "documents.jsonl")},
        format="multipart",
    )
    assert job["errors"] == in_request.json()["errors"]
    assert any(error["line"] == 1001 for error in job["errors"])
    assert row_counts() == before
    assert not JobUpload.objects.exists()


def test_a_large_result_list_upload_passes_its_options_to_the_import(
    client_as, analyst, query_with_hits, settings, django_capture_on_commit_callbacks
):
    settings.UPLOAD_BACKGROUND_BYTES = 10
    queries = upload("id,text\nQ-7,tent\n", "queries.csv")
    run = upload("Q-7 Q0 SKU-1 1 2.5 tag\nQ-7 Q0 SKU-2 2 1.5 tag\n", "run.txt")
    body = {
        "file": run,
        "format": "trec",
        "name": "candidate",
        "engine": "bm25+synonyms",
        "captured_at": "2026-11-20T10:00:00Z",
        "queries": queries,
    }
    client = client_as(analyst)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/projects/outdoor/result-lists/import/", body, "multipart")
    assert response.status_code == 202
    job = client.get(response.json()["url"]).json()
    assert job["status"] == "done", job["errors"]
    result_list = query_with_hits.project.result_lists.get(name="candidate")
    assert job["result"]["result_list"] == {"id": result_list.pk, "name": "candidate"}
    assert result_list.engine == "bm25+synonyms"
    assert result_list.captured_at.isoformat() == "2026-11-20T10:00:00+00:00"
    assert list(result_list.hits.values_list("rank", "document__external_id")) == [
        (1, "SKU-1"),
        (2, "SKU-2"),
    ]


def test_a_job_of_another_kind_reads_the_same(client_as, analyst, rater, project):
    job = Job.objects.create(kind=Job.Kind.QUERIES, label="q.csv", project=project)
    response = client_as(analyst).get(f"/api/jobs/{job.pk}/")
    assert response.json()["status"] == "queued" and response.json()["percent"] is None
    assert client_as(rater).get(f"/api/jobs/{job.pk}/").status_code == 403
    assert client_as(analyst).get("/api/jobs/not-a-uuid/").status_code == 404
