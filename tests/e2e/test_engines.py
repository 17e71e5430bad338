"""The search engines in the browser: describe an Elasticsearch index, capture a result
list with a moving progress bar (a django-tasks-db worker process runs it, as in
production), try a change and keep it, compare template versions, and run one query
live. The engine is the test's own BM25 server on 127.0.0.1 speaking Elasticsearch.

Screenshots at 1280 and 390 px go to $SCREENSHOTS (engines-<page>-<width>.png).
"""

import json
import os

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from judgements.models import Capture, SearchEndpoint
from tests.config.test_production import database_url
from tests.engines.conftest import cranfield_project
from tests.engines.engine_server import EngineServer
from tests.processes import start, stop, tail

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")
WIDTHS = (1280, 390)


@pytest.fixture
def elastic():
    server = EngineServer(flavour="elasticsearch", index="cranfield").start()
    yield server
    server.stop()


@pytest.fixture
def worker(settings, tmp_path):
    """The production worker, allowed to reach 127.0.0.1 as its operator would set it."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "TASKS_BACKEND": "database",
        "DEBUG": "1",
        "OUTBOUND_ALLOW": "127.0.0.1",
    }
    command = ["manage.py", "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload"]
    process = start(command, environment, tmp_path / "worker.log")
    yield process
    stop(process)


def log_in(page, username, password):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("/")


def shoot(page, name: str) -> dict:
    """Screenshots at both widths; returns the pixels the page is too wide, by width."""
    os.makedirs(SCREENSHOTS, exist_ok=True)
    too_wide = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=f"{SCREENSHOTS}/engines-{name}-{width}.png", full_page=True)
        sideways = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if sideways > 0:
            too_wide[f"{name} at {width}"] = sideways
    page.set_viewport_size({"width": 1280, "height": 900})
    return too_wide


def wait_until_finished(page, worker) -> set:
    seen = set()
    while page.locator("#job[data-status=queued], #job[data-status=running]").count():
        try:
            value = page.evaluate("document.getElementById('job-progress')?.value ?? null")
        except PlaywrightError:  # The page reloads itself when the capture ends.
            continue
        if value is not None:
            seen.add(round(value))
        page.wait_for_timeout(100)
        assert worker.poll() is None, tail(worker)
    return seen


def test_capture_try_keep_compare_and_run_live(page, live_server, worker, elastic, analyst):
    project = cranfield_project(analyst, queries=120)
    elastic.delay = 0.6  # Per request of eight queries: slow enough to see the bar move.
    analyst.set_password("analyst-password-1")
    analyst.save()
    page.set_default_timeout(60_000)
    log_in(page, analyst.username, "analyst-password-1")
    too_wide = {}

    page.goto(f"/projects/{project.slug}/")
    page.click("nav.dash-tabs a:text('Search engines')")
    expect(page.locator("#endpoints")).to_contain_text("No search endpoint yet")
    too_wide |= shoot(page, "list-empty")

    # A template that is not JSON is refused on the page, naming where.
    page.fill("#id_name", "prod-es")
    page.fill("#id_base_url", elastic.url)
    page.fill("#id_index", "cranfield")
    page.fill("#id_title_field", "title")
    page.fill("#id_snippet_field", "text")
    page.fill("#id_template", '{"query": {"match": {"text": {{query}}}}}')
    page.click("button:text('Save endpoint')")
    expect(page.locator(".field.invalid")).to_contain_text("The template is not valid JSON")
    too_wide |= shoot(page, "form-error")
    template = {"query": {"multi_match": {"query": "{{query}}", "fields": ["title^2", "text"]}}}
    page.fill("#id_template", json.dumps(template, indent=2))
    page.click("button:text('Save endpoint')")
    page.wait_for_url("**/engines/*/")
    endpoint = SearchEndpoint.objects.get()

    # Capture now: the worker runs it; the bar moves; the list is stored.
    page.fill("#id_name", "prod")
    page.click("button:text('Capture now')")
    page.wait_for_url("**/captures/*/")
    seen = wait_until_finished(page, worker)
    expect(page.get_by_test_id("job-status")).to_have_text("Done")
    assert any(0 < value < 100 for value in seen), seen
    too_wide |= shoot(page, "capture")
    page.goto(endpoint.get_absolute_url())
    expect(page.locator("#captures-table")).to_contain_text("prod")
    too_wide |= shoot(page, "endpoint")

    # Try titles only against it.
    page.click("a:text('Try a change')")
    page.fill("#id_template", json.dumps({"query": {"match": {"title": "{{query}}"}}}))
    page.fill("#id_note", "titles only")
    page.click("button:text('Run the try')")
    page.wait_for_url("**/captures/*/")
    wait_until_finished(page, worker)
    expect(page.get_by_test_id("try-mean")).not_to_have_text("—")
    change = float(page.get_by_test_id("try-change").inner_text())
    assert change < 0  # Titles alone lose to titles and abstracts on Cranfield.
    assert int(page.get_by_test_id("try-unjudged").inner_text()) > 0
    too_wide |= shoot(page, "try")
    page.fill("#id_name", "titles only")
    page.click("button:text('Keep and queue')")
    expect(page.locator(".messages")).to_contain_text("Kept as result list titles only")
    assert Capture.objects.get(kind="try").result_list.name == "titles only"

    # Compare the two versions.
    page.goto(endpoint.get_absolute_url())
    page.click("a:text('Compare with current')")
    expect(page.get_by_test_id("template-diff")).to_contain_text("multi_match")
    too_wide |= shoot(page, "versions")

    # One query live, from its page in the stored list.
    prod = project.result_lists.get(name="prod")
    query = project.queries.get(external_id="1")
    page.goto(f"/metrics/{project.slug}/{prod.pk}/queries/{query.pk}/")
    page.click("a:text('Run live on prod-es')")
    expect(page.locator("#live-hits li")).to_have_count(10)
    page.locator("#live-hits details summary").first.click()
    expect(page.locator("#live-hits details pre").first).to_contain_text('"_source"')
    too_wide |= shoot(page, "live")

    assert not too_wide, too_wide
