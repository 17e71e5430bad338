"""From an empty install to NDCG in the browser: no demo data, no admin for the analyst's
work, no API, no command line (issue: the analyst's workspace).

An admin, made with ``createsuperuser`` as the README says, adds the analyst in the
Django admin. The analyst creates a project with a 0-4 scale and guidelines, uploads
queries, documents and a result list (first with an error), adds a rater with an
invitation link; the rater signs in through it and grades five pairs; the analyst
reads NDCG on the overview and downloads the consensus qrels.
"""

import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from judgements.models import Document, Hit, Judgement, Project, Query, ResultList
from tests.config.test_production import database_url
from tests.processes import start, stop, tail

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")

QUERIES = "id,text,description\nq1,tent,A tent for two\nq2,rain jacket,\nq3,stove,\n"
DOCUMENTS = "".join(
    f'{{"id": "SKU-{n}", "title": "Product {n}", "snippet": "About product {n}"}}\n'
    for n in range(1, 7)
)
RUN_LINES = [
    f"{qid} Q0 SKU-{doc} {rank} {10 - rank} bm25"
    for qid, docs in (("q1", (1, 2, 3)), ("q2", (4, 5)), ("q3", (6, 1)))
    for rank, doc in enumerate(docs, start=1)
]
BROKEN_RUN = "\n".join([*RUN_LINES[:2], "q1 Q0 SKU-3 3 high bm25", *RUN_LINES[3:]]) + "\n"
FIXED_RUN = "\n".join(RUN_LINES) + "\n"
GRADES = [4, 0, 3, 2, 1]


def qid(query) -> str:
    """A query's id in TREC files: the team's own id where the app keeps one."""
    return query.external_id or str(query.pk)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def row_counts() -> dict[str, int]:
    return {
        "queries": Query.objects.count(),
        "documents": Document.objects.count(),
        "lists": ResultList.objects.count(),
        "hits": Hit.objects.count(),
    }


def log_in(page, username, password):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("/")


def admin_adds_the_analyst(page_without_javascript):
    page = page_without_javascript
    page.goto("/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "root-password-1")
    page.click("input[type=submit]")
    page.goto("/admin/auth/user/add/")
    page.fill("#id_username", "ana")
    page.fill("#id_password1", "analyst-password-1")
    page.fill("#id_password2", "analyst-password-1")
    page.click("input[name=_continue]")
    page.select_option("#id_groups", label="analyst")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")


def create_the_project(page):
    page.click("text=New project")
    page.fill("#id_name", "Shop search")
    # The default scale is 0-3: relabel it and add a fifth grade, 4.
    labels = ["Harmless miss", "Weak", "Fair", "Good"]
    for number, label in enumerate(labels):
        page.fill(f"[name=scale-{number}-label]", label)
    page.click("[data-add-grade]")
    assert page.input_value("[name=scale-4-value]") == "4"
    page.fill("[name=scale-4-label]", "Perfect")
    page.fill("[name=scale-4-description]", "Exactly what was wanted")
    page.fill("#id_guidelines", "# Grading\n\nA **perfect** hit is the product searched for.")
    page.wait_for_selector("#guidelines-preview h1:text('Grading')")
    assert page.inner_html("#guidelines-preview strong") == "perfect"
    page.screenshot(path=f"{SCREENSHOTS}/workspace-new-project.png", full_page=True)
    page.click("button:text('Create project')")
    page.wait_for_url("**/uploads/")


def upload(page, kind: str, path: str, **fields):
    section = page.locator(f"#{kind}")
    section.locator("input[name=file]").set_input_files(path)
    for name, value in fields.items():
        target = section.locator(f"[name={name}]")
        if name in ("format",):
            target.select_option(value)
        elif name == "queries":
            target.set_input_files(value)
        else:
            target.fill(value)
    section.locator("[data-upload-button]").click()
    page.wait_for_load_state()


def test_an_analyst_goes_from_an_empty_install_to_ndcg(
    browser, live_server, page, page_without_javascript, tmp_path, monkeypatch
):
    assert not Project.objects.exists()
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "root-password-1")
    call_command("createsuperuser", "--noinput", username="root", email="root@example.org")
    admin_adds_the_analyst(page_without_javascript)

    # The screenshots below are at a laptop's width (tests/e2e/test_workspace_layout.py
    # takes every page at a phone's too).
    page.set_viewport_size({"width": 1280, "height": 1000})
    log_in(page, "ana", "analyst-password-1")
    page.get_by_text("No projects yet").wait_for()
    create_the_project(page)
    project = Project.objects.get()
    assert project.slug == "shop-search"
    assert project.grade_values == [0, 1, 2, 3, 4]
    assert project.grade_label(4) == "Perfect"

    queries = write(tmp_path, "queries.csv", QUERIES)
    upload(page, "queries", queries, format="csv")
    assert "3 created" in page.inner_text("#queries [data-testid=upload-outcome]")
    upload(page, "documents", write(tmp_path, "documents.jsonl", DOCUMENTS))
    assert "6 created" in page.inner_text("#documents [data-testid=upload-outcome]")

    before = row_counts()
    upload(page, "result_list", write(tmp_path, "broken.run", BROKEN_RUN), queries=queries)
    errors = page.locator("#result_list [data-testid=import-error]")
    assert errors.count() == 1
    assert re.match(r"3\s+score\s+", errors.first.inner_text())
    assert "Nothing was written" in page.inner_text("#result_list")
    page.screenshot(path=f"{SCREENSHOTS}/workspace-upload-errors.png", full_page=True)
    assert row_counts() == before == {"queries": 3, "documents": 6, "lists": 0, "hits": 0}

    upload(page, "result_list", write(tmp_path, "bm25.run", FIXED_RUN), queries=queries)
    assert "7 created" in page.inner_text("#result_list [data-testid=upload-outcome]")
    assert Hit.objects.count() == len(RUN_LINES)

    page.goto(f"/metrics/{project.slug}/raters/")
    page.fill("#id_account_username", "rita")
    page.fill("#id_account_first_name", "Rita")
    page.click("button:text('Add rater')")
    invitation = page.get_by_test_id("invitation-url").input_value()
    page.reload()
    assert page.get_by_test_id("invitation-url").count() == 0  # shown once

    rater_context = browser.new_context(base_url=live_server.url)
    rater = rater_context.new_page()
    rater.goto(invitation)
    rater.fill("#id_new_password1", "rita-password-1")
    rater.fill("#id_new_password2", "rita-password-1")
    rater.click("button[type=submit]")
    # The invitation signs the rater in and lands them in their project's queue.
    rater.wait_for_url(f"**/rate/{project.slug}/")
    for done, grade in enumerate(GRADES, start=1):
        rater.locator(f"button[name=answer][value='{grade}']").click()
        # Not wait_for_function: the Content-Security-Policy refuses its eval.
        expect(rater.get_by_test_id("done")).to_have_text(str(done))
    rater_context.close()
    graded = Judgement.objects.filter(rater__username="rita", kind="grade")
    assert sorted(graded.values_list("grade", flat=True)) == sorted(GRADES)

    page.goto(f"/metrics/{project.slug}/")
    mean = page.get_by_test_id("mean").first.inner_text()
    assert re.fullmatch(r"0\.\d{4}|1\.0000", mean), mean

    page.goto(f"/projects/{project.slug}/")
    with page.expect_download() as download:
        page.click(".downloads a:text('TREC qrels')")
    lines = Path(download.value.path()).read_text().splitlines()
    # The rater's grades, one line per pair in query and document order.
    expected = sorted(
        (event.query_id, event.document_id, qid(event.query), event.document, event.grade)
        for event in graded
    )
    assert lines == [f"{q} 0 {doc.external_id} {grade}" for *_, q, doc, grade in expected]
    assert Query.objects.count() == 3


@pytest.fixture
def worker(settings, tmp_path):
    """A django-tasks-db worker process on the test database, as in production: the
    page's request only queues the job, and this other process runs it."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "TASKS_BACKEND": "database",
        "DEBUG": "1",
    }
    command = ["manage.py", "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload"]
    process = start(command, environment, tmp_path / "worker.log")
    yield process
    stop(process)


def big_documents_file(tmp_path: Path, megabytes: int) -> tuple[Path, int]:
    """JSON Lines documents, just over ``megabytes`` MB; returns the file and its lines."""
    path = tmp_path / "documents.jsonl"
    padding = "a long description of a good tent " * 12
    written = number = 0
    with path.open("w") as out:
        while written <= megabytes * 1_000_000:
            line = f'{{"id": "D{number}", "title": "Tent {number}", "snippet": "{padding}"}}\n'
            written += out.write(line)
            number += 1
    return path, number


def test_a_50_mb_upload_runs_in_the_background_with_a_moving_progress_bar(
    page, live_server, worker, tmp_path, analyst
):
    project = Project.objects.create(name="Catalogue", slug="catalogue")
    analyst.set_password("analyst-password-1")
    analyst.save()
    path, documents = big_documents_file(tmp_path, 50)
    page.set_default_timeout(240_000)
    log_in(page, analyst.username, "analyst-password-1")
    page.goto(f"/projects/{project.slug}/uploads/")
    section = page.locator("#documents")
    section.locator("input[name=file]").set_input_files(str(path))
    section.locator("[data-upload-button]").click()
    # The browser keeps the form's #documents anchor across the redirect to the job.
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f-]+/(#documents)?$"))

    seen = set()
    while page.locator("#job-progress").count():
        try:
            value = page.evaluate("document.getElementById('job-progress')?.value ?? null")
        except PlaywrightError:  # the page reloaded between the two reads: the job ended
            continue
        if value is not None:
            if 0 < value < 100 and not any(0 < old < 100 for old in seen):
                page.screenshot(path=f"{SCREENSHOTS}/workspace-job.png", full_page=True)
            seen.add(round(value))
        page.wait_for_timeout(100)
        assert worker.poll() is None, tail(worker)
    page.get_by_test_id("job-summary").wait_for()
    assert "Done" in page.get_by_test_id("job-status").inner_text()
    intermediate = sorted(value for value in seen if 0 < value < 100)
    assert len(intermediate) >= 2, seen
    assert project.documents.count() == documents
