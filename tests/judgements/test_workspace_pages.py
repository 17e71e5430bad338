"""The workspace pages: a project's settings, uploads, jobs, deletes and downloads.

charlie (analyst) uses them; tests/judgements/test_workspace_roles.py shows that alice
(rater), dave (no role) and anonymous visitors cannot.
"""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgements import importers, imports
from judgements.guidelines import guidelines_html
from judgements.models import Hit, Job, MachineJudge, Project, ResultList
from judgements.projects import metric_default_fields
from judgements.uploads import UPLOADS, UploadKind
from judgements.workspace.forms import UploadForm
from metrics.registry import MetricSpec
from tests.factories import HitFactory, JudgementFactory, ResultListFactory, UserFactory
from tests.judgements.forms import project_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def charlie(client, analyst):
    client.force_login(analyst)
    return client


def url(name, *args):
    return reverse(f"judgements:{name}", args=args)


def test_a_new_project_starts_from_the_default_scale_and_metric(charlie):
    form = charlie.get(url("project_new")).context["form"]
    assert [step["value"] for step in form["scale"].value()] == [0, 1, 2, 3]
    assert form["metric_k"].value() == 10 and form["consensus"].value() == "mean"


def test_an_analyst_creates_a_project_with_a_harmful_grade(charlie):
    scale = [
        {"value": -1, "label": "Harmful", "description": "Misleads"},
        {"value": 0, "label": "Irrelevant", "description": ""},
        {"value": 2, "label": "Relevant", "description": ""},
    ]
    data = project_form_data(name="Shop search", scale=scale, guidelines="# Be kind")
    # A removed row and a blank row are left out.
    data.update({"scale-total": 5, "scale-3-value": "7", "scale-3-label": "Gone"})
    data["scale-3-remove"] = "on"
    response = charlie.post(url("project_new"), data)
    project = Project.objects.get()
    assert response.url == url("uploads", "shop-search")
    assert project.scale == scale and project.guidelines == "# Be kind"


def test_rows_out_of_order_are_refused_naming_the_grade(charlie):
    scale = [{"value": 1, "label": "Yes"}, {"value": 0, "label": "No"}]
    response = charlie.post(url("project_new"), project_form_data(name="X", scale=scale))
    assert response.status_code == 200  # the form again, with its error
    assert response.context["form"].errors["scale"] == [
        "Grades must be listed lowest first: grade 2 (0) comes after 1."
    ]
    assert not Project.objects.exists()


def test_a_value_that_is_not_a_whole_number_is_refused(charlie):
    data = project_form_data(name="X")
    data["scale-1-value"] = "one"
    response = charlie.post(url("project_new"), data)
    assert response.context["form"].errors["scale"] == ["Grade 2: “one” is not a whole number."]


def test_the_settings_page_refuses_to_drop_a_grade_in_use(charlie, query_with_hits):
    project = query_with_hits.project
    JudgementFactory(query=query_with_hits, document=query_with_hits.hits.first().document)
    data = project_form_data(project, scale=project.scale[:2] + project.scale[3:])
    response = charlie.post(url("project_settings", "outdoor"), data)
    assert response.status_code == 400
    errors = response.context["form"].errors["scale"]
    assert errors == ["Grade 2 (Relevant) cannot be removed: 1 grade in the log uses it."]
    assert Project.objects.get().grade_values == [0, 1, 2, 3]


def test_the_settings_page_changes_settings_but_not_the_slug(charlie, project):
    data = project_form_data(project, name="Gear", slug="stolen", judges_per_pair=3, metric_k=5)
    response = charlie.post(url("project_settings", "outdoor"), data)
    assert response.url == url("project", "outdoor")
    project.refresh_from_db()
    assert (project.name, project.slug, project.judges_per_pair, project.metric_k) == (
        "Gear",
        "outdoor",
        3,
        5,
    )


def test_every_metric_parameter_the_project_stores_is_on_the_settings_form(charlie, project):
    form = charlie.get(url("project_settings", "outdoor")).context["form"]
    names = [field.name for field in form.metric_fields]
    assert names == metric_default_fields()
    # Each MetricSpec parameter the project keeps, as metric_<name> (consensus as itself).
    stored = {name.removeprefix("metric_") for name in names}
    kept = [field for field in MetricSpec.__dataclass_fields__ if field in stored]
    assert kept == [name.removeprefix("metric_") for name in names]
    assert {"k", "gain", "discount", "ideal", "ideal_depth", "unjudged", "consensus"} <= stored


def test_the_guidelines_preview_is_the_rating_pages_html(charlie):
    text = "# Grades\n\n<script>alert(1)</script> [x](javascript:alert(2)) **bold**"
    response = charlie.post(url("guidelines_preview"), {"text": text})
    html = response.content.decode()
    assert html == guidelines_html(text)
    assert "<strong>bold</strong>" in html and "<script" not in html and "javascript:" not in html


def test_every_judgement_format_the_importers_read_is_offered(charlie, project):
    sections = charlie.get(url("uploads", "outdoor")).context["sections"]
    forms = {section["upload"].kind: section["form"] for section in sections}
    offered = [name for name, _ in forms["judgements"].fields["format"].choices]
    assert offered == list(importers.JUDGEMENT_FORMATS)
    assert forms["result_list"].fields["format"].choices == [
        ("trec", "trec: TREC run"),
        ("json", "json: Result list JSON"),
    ]
    assert set(forms) == {"queries", "documents", "result_list", "judgements", "search_log"}
    # The option to create what the file names but the project lacks says what it does.
    assert "lacks" in forms["judgements"].fields["create_missing"].help_text


def test_a_format_added_to_the_importers_appears_on_the_page(charlie, project, monkeypatch):
    def parquet(chunks, vocabulary):
        """Grades in a Parquet file."""

    monkeypatch.setitem(importers.JUDGEMENT_FORMATS, "parquet", parquet)
    form = UploadForm(upload=UPLOADS["judgements"])
    assert ("parquet", "parquet: Grades in a Parquet file") in form.fields["format"].choices


def test_a_services_new_keyword_flag_is_offered_and_passed_through(project, analyst):
    seen = {}

    def import_with_flag(*, project, upload, file_format, create_unknown_queries=False):
        seen.update(file_format=file_format, create_unknown_queries=create_unknown_queries)
        return imports.ImportResult(rows=0, created=0)

    kind = UploadKind("queries", "Queries", "", import_with_flag, importers.QUERY_FORMATS)
    data = {"format": "csv", "create_unknown_queries": "on"}
    form = UploadForm(data, {"file": SimpleUploadedFile("q.csv", b"text\n")}, upload=kind)
    assert form.is_valid(), form.errors
    assert form.fields["create_unknown_queries"].label == "Create unknown queries"
    kind.run(project=project, files={"file": [b""]}, user=analyst, options=form.options())
    assert seen == {"file_format": "csv", "create_unknown_queries": True}


def post_file(client, project, kind, content: bytes, name="upload.txt", **fields):
    file = SimpleUploadedFile(name, content)
    return client.post(url("upload", project.slug, kind), {"file": file, **fields})


def test_a_small_upload_is_imported_at_once_with_its_summary(charlie, project):
    response = post_file(charlie, project, "queries", b"text\nhat\nscarf\n", format="csv")
    assert response.url == url("uploads", "outdoor") + "#queries"
    message = charlie.get(response.url).context["messages"]
    assert [str(m) for m in message] == [
        "Queries from upload.txt: 2 rows read, 2 created, 0 unchanged."
    ]
    response = post_file(charlie, project, "queries", b"text\nhat\nboots\n", format="csv")
    text = [str(m) for m in charlie.get(response.url).context["messages"]]
    assert text == ["Queries from upload.txt: 2 rows read, 1 created, 1 unchanged."]


def test_errors_are_listed_with_line_and_column_and_nothing_is_written(charlie, query_with_hits):
    project = query_with_hits.project
    run = f"{query_with_hits.pk} Q0 SKU-1 1 2 r\n{query_with_hits.pk} Q0 SKU-2 2 x r\n"
    lists = ResultList.objects.count()
    response = post_file(charlie, project, "result_list", run.encode(), "bad.run", format="trec")
    assert response.status_code == 400
    section = next(s for s in response.context["sections"] if s["upload"].kind == "result_list")
    assert section["errors"] == [{"field": "score", "line": 2, "message": '"x" is not a number.'}]
    html = response.content.decode()
    assert "Nothing was written from bad.run" in html
    assert re.search(r"<td class=\"num\">2</td>\s*<td>score</td>", html)
    assert ResultList.objects.count() == lists


def test_a_large_upload_goes_to_a_job_page_that_shows_its_outcome(
    charlie, project, settings, django_capture_on_commit_callbacks
):
    settings.UPLOAD_BACKGROUND_BYTES = 10
    with django_capture_on_commit_callbacks(execute=True):
        response = post_file(charlie, project, "queries", b"text\nhat\nscarf\n", format="csv")
    job = Job.objects.get()
    assert response.url == url("job", job.pk)
    page = charlie.get(response.url)
    assert page.context["lines"] == [("rows read", 2), ("created", 2), ("unchanged", 0)]
    assert b"job.js" not in page.content  # finished: nothing to poll
    assert project.queries.count() == 2


def test_a_running_job_page_polls_the_jobs_api(charlie, project):
    job = Job.objects.create(kind="documents", label="d.jsonl", project=project, total=2 << 20)
    Job.objects.filter(pk=job.pk).update(status="running", done=1 << 20, stage="Reading")
    html = charlie.get(url("job", job.pk)).content.decode()
    assert f'data-status-url="/api/jobs/{job.pk}/"' in html
    assert 'value="50"' in html and "job.js" in html


def test_deleting_a_project_asks_for_its_slug_then_runs_as_a_job(
    charlie, project, django_capture_on_commit_callbacks
):
    response = charlie.post(url("project_delete", "outdoor"), {"confirm": "Outdoor"})
    assert response.status_code == 400 and Project.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = charlie.post(url("project_delete", "outdoor"), {"confirm": "outdoor"})
    job = Job.objects.get()
    assert response.url == url("job", job.pk)
    assert not Project.objects.exists()
    page = charlie.get(response.url)
    assert page.context["lines"] == [("deleted", "Outdoor gear")]


def test_a_project_being_deleted_leaves_the_project_list(charlie, project, analyst):
    from judgements.jobs import project_delete_start

    project_delete_start(project=project, user=analyst)
    assert list(charlie.get(url("home")).context["projects"]) == []
    assert b"being deleted" in charlie.get(url("project", "outdoor")).content


def test_deleting_a_result_list_keeps_the_other(
    charlie, query_with_hits, django_capture_on_commit_callbacks
):
    project = query_with_hits.project
    bm25 = project.result_lists.get()
    other = ResultListFactory(project=project, name="other")
    HitFactory(result_list=other, query=query_with_hits, rank=1)
    with django_capture_on_commit_callbacks(execute=True):
        charlie.post(url("result_list_delete", "outdoor", bm25.pk))
    assert list(project.result_lists.values_list("name", flat=True)) == ["other"]
    assert Hit.objects.count() == 1


def test_the_project_page_offers_every_export_as_the_apis_streamed_response(
    charlie, query_with_hits, rater
):
    # Every export has something in it: a grade, a result list and a machine judge.
    JudgementFactory(query=query_with_hits, document=query_with_hits.hits.first().document,
                     rater=rater, grade=2)  # fmt: skip
    judge = UserFactory(username="judge-bot")
    MachineJudge.objects.create(
        project=query_with_hits.project, rater=judge, name="bot", model="m",
        base_url="http://127.0.0.1:9/v1",
    )  # fmt: skip
    page = charlie.get(url("project", "outdoor"))
    links = {
        (group.title, download.label): download.url
        for group in page.context["exports"]
        for download in group.downloads
    }
    run = query_with_hits.hits.first().result_list
    consensus = "/api/projects/outdoor/consensus/export/?format="
    assert links == {
        ("Consensus grades", "TREC qrels"): consensus + "qrels",
        ("Consensus grades", "Quepid CSV"): consensus + "quepid",
        ("Consensus grades", "RRE JSON"): consensus + "rre",
        ("Consensus grades", "LTR (RankLib)"): consensus + "ltr",
        ("Judgement events", "CSV"): "/api/projects/outdoor/judgements/export/?format=csv",
        (
            "Judgement events",
            "JSON Lines",
        ): "/api/projects/outdoor/judgements/export/?format=jsonl",
        ("Result lists", "bm25"): f"/api/result-lists/{run.pk}/export/",
        ("Metric series", "CSV, human grades"): "/metrics/outdoor/series/export/",
        (
            "Metric series",
            "CSV, machine judges' grades",
        ): "/metrics/outdoor/series/export/?grades=machine",
        ("Metric series", "CSV, both"): "/metrics/outdoor/series/export/?grades=both",
    }
    for link in links.values():
        response = charlie.get(link)
        assert response.status_code == 200, link
        assert response.streaming
    events = charlie.get("/api/projects/outdoor/judgements/export/?format=csv")
    assert b"".join(events.streaming_content).startswith(b"id,query_id,")


@pytest.mark.parametrize(
    ("setup", "step"),
    [
        ("empty", "Upload queries →"),
        ("queries", "Upload a result list →"),
        ("hits", "Add raters →"),
    ],
)
def test_an_unfinished_project_says_what_to_do_next(charlie, project, setup, step):
    if setup == "queries":
        project.queries.create(text="tent")
    if setup == "hits":
        HitFactory(result_list__project=project)
    html = charlie.get(url("project", "outdoor")).content.decode()
    assert step in html


def test_a_failed_deletion_says_nothing_was_deleted(charlie, project):
    errors = [{"field": None, "line": None, "message": "The job failed unexpectedly."}]
    job = Job.objects.create(
        kind="delete_project", label="Outdoor gear", project=project, status="failed"
    )
    Job.objects.filter(pk=job.pk).update(errors=errors)
    text = charlie.get(url("job", job.pk)).content.decode()
    assert "Nothing was deleted." in text and "The job failed unexpectedly." in text
    assert "upload the file again" not in text
    # The project is whole: the page leads back to it.
    assert f'href="{url("project", "outdoor")}"' in text


def test_an_empty_project_offers_only_the_downloads_it_can_fill(charlie, query_with_hits):
    page = charlie.get(url("project", "outdoor"))

    offered = {
        (group.title, download.label)
        for group in page.context["exports"]
        for download in group.downloads
    }
    assert offered == {("Result lists", "bm25")}


def test_a_new_project_says_there_is_nothing_to_download_yet(charlie, project):
    page = charlie.get(url("project", "outdoor"))

    assert page.context["exports"] == []
    assert b'data-testid="no-downloads"' in page.content


def test_an_uploads_errors_are_listed_in_line_order_the_files_own_last():
    """However the importer found them (one check after another over the file), the
    uploads page lists a rejected file's errors by line; those of no line come last."""
    from judgements.workspace.views import _in_line_order

    found = [
        {"line": 9, "field": "rating", "message": "not a grade"},
        {"line": None, "field": None, "message": "... and 3 more"},
        {"line": 2, "field": "query", "message": "empty"},
        {"line": 5, "field": "docid", "message": "empty"},
    ]

    assert [error["line"] for error in _in_line_order(found)] == [2, 5, 9, None]


def test_the_search_log_card_takes_ubi_records_with_their_ordinal_base(charlie, project):
    from searchlogs.models import SearchEvent
    from tests.searchlogs.test_api import chorus_esci

    form = UploadForm(upload=UPLOADS["search_log"])
    assert [name for name, _ in form.fields["format"].choices] == ["ours", "ubi"]
    assert form.fields["ordinal_base"].initial == 1

    refused = post_file(charlie, project, "search_log", chorus_esci(), "ubi.ndjson",
                        format="ubi", ordinal_base=1)  # fmt: skip
    assert refused.status_code == 400
    section = next(s for s in refused.context["sections"] if s["upload"].kind == "search_log")
    fields = {error["field"] for error in section["errors"]}
    assert "event_attributes.position.ordinal" in fields
    assert SearchEvent.objects.filter(project=project).count() == 0

    response = post_file(charlie, project, "search_log", chorus_esci(), "ubi.ndjson",
                         format="ubi", ordinal_base=0)  # fmt: skip
    assert response.url == url("uploads", "outdoor") + "#search_log"
    [message] = [str(m) for m in charlie.get(response.url).context["messages"]]
    assert message.startswith("Search log from ubi.ndjson: 260 rows read, 260 created")
    assert SearchEvent.objects.filter(project=project).count() == 260
