"""A machine judge in the browser: configure it, run it on 20 pairs with a moving
progress bar (a django-tasks-db worker process runs the task, as in production), read
its certification and overrule one of its grades. The model is the test's own
OpenAI-compatible server on 127.0.0.1.

Screenshots at 1280 and 390 px go to $SCREENSHOTS (judges-<page>-<width>.png).
"""

import os

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from judgements.models import Judgement, MachineJudge
from judgements.services import judgement_record
from tests.e2e.test_workspace import worker  # noqa: F401  (the worker process fixture)
from tests.machine.conftest import pool_project
from tests.model_server import ModelServer
from tests.processes import tail

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")
WIDTHS = (1280, 390)


@pytest.fixture(autouse=True)
def _local_model_server(settings, monkeypatch):
    """The operator's allowance for the test's model server on 127.0.0.1, which the
    outbound policy refuses otherwise: for this process (the live server, where the
    judge's form checks its base URL) and the worker's, which asks the model."""
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    monkeypatch.setenv("OUTBOUND_ALLOW", "127.0.0.1")


@pytest.fixture
def model_server():
    server = ModelServer().start()
    yield server
    server.stop()


def log_in(page, username, password):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("/")


def sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def shoot(page, name: str) -> dict:
    """Screenshots at both widths; returns the pixels the page is too wide, by width."""
    too_wide = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=f"{SCREENSHOTS}/judges-{name}-{width}.png", full_page=True)
        if sideways(page) > 0:
            too_wide[f"{name} at {width}"] = sideways(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    return too_wide


def test_configure_run_certify_and_overrule_a_judge(
    page,
    live_server,
    worker,  # noqa: F811  (the imported fixture)
    model_server,
    analyst,
    rater,
):
    project = pool_project(4, 5)  # 20 pool pairs, titles "q0 d0" ... "q3 d4".
    documents = {d.title: d for d in project.documents.all()}
    # Humans graded the first query's five pairs; the table agrees on four of them.
    for d, grade in enumerate([3, 2, 1, 0, 0]):
        query = project.queries.get(text="query 0")
        judgement_record(rater=rater, query=query, document=documents[f"q0 d{d}"], grade=grade)
    model_server.answers = {"q0 d0": 3, "q0 d1": 2, "q0 d2": 1, "q0 d3": 1, "q0 d4": 0}
    model_server.delay = 0.15
    analyst.set_password("analyst-password-1")
    analyst.save()
    page.set_default_timeout(60_000)
    log_in(page, analyst.username, "analyst-password-1")
    too_wide = {}

    # Before any judge: the overview's machine grades say what to do next.
    page.goto(f"/metrics/{project.slug}/?grades=machine")
    expect(page.get_by_test_id("series-params")).to_contain_text("Replayed from the judgement log")
    expect(page.locator(".chart-empty").first).to_contain_text("run a machine judge")
    too_wide |= shoot(page, "overview-empty")

    # Configure.
    page.goto(f"/projects/{project.slug}/judges/")
    expect(page.locator("#judges")).to_contain_text("No machine judge yet")
    too_wide |= shoot(page, "list-empty")
    page.fill("#id_name", "Local test model")
    page.fill("#id_base_url", model_server.url)
    page.fill("#id_model", "tiny-grader")
    page.fill("#id_concurrency", "2")
    page.click("button:text('Create judge')")
    page.wait_for_url("**/judges/*/")
    judge = MachineJudge.objects.get()
    expect(page.locator("#run")).to_contain_text("Never run")

    # Run on the 20 pairs, and watch the bar move.
    page.fill("#id_max_pairs", "20")
    page.click("button:text('Start a run')")
    page.wait_for_url(f"**/judges/{judge.pk}/")
    seen = set()
    while page.locator("#run[data-status=running]").count():
        try:
            value = page.evaluate("document.getElementById('run-progress')?.value ?? null")
        except PlaywrightError:  # The page reloads itself when the run stops.
            continue
        if value is not None:
            if 0 < value < 100 and not any(0 < old < 100 for old in seen):
                too_wide |= shoot(page, "running")
            seen.add(round(value))
        page.wait_for_timeout(100)
        assert worker.poll() is None, tail(worker)
    expect(page.get_by_test_id("run-status")).to_contain_text("Done: 20 of 20 pairs answered")
    assert any(0 < value < 100 for value in seen), seen
    assert page.locator("#answers tbody tr").count() == 20
    too_wide |= shoot(page, "judge")

    # Overrule its grade of q0 d3 (1, where humans said 0) with the analyst's own 0.
    machine = Judgement.objects.get(rater=judge.rater, document=documents["q0 d3"])
    row = page.locator(f"form.overrule:has(input[value='{machine.pk}'])")
    row.locator("select").select_option("0")
    row.locator("button").click()
    expect(page.locator(".messages")).to_contain_text("Your grade (Irrelevant) now counts")
    overrule = Judgement.objects.get(rater=analyst)
    assert (overrule.source, overrule.grade, overrule.document_id) == (
        "overrule",
        0,
        machine.document_id,
    )

    # Certification: five gold pairs, one disagreement (1 against 0).
    page.click("a:text('Certification')")
    expect(page.get_by_test_id("gold")).to_have_text("5")
    # Judge minus humans: 0 everywhere but q0 d3, where the judge's 1 meets two 0s.
    expect(page.get_by_test_id("msd")).to_have_text("0.2000")
    expect(page.get_by_test_id("verdict")).to_contain_text(
        "Not certified: 5 gold pairs, 50 needed"
    )
    expect(page.locator("#confusion tbody tr").nth(0)).to_contain_text("0 Irrelevant")
    page.click("button:text('Run canaries')")
    page.wait_for_url("**/certification/")
    # The worker asks the canaries in the background: reload until their rates show.
    for _ in range(100):
        if judge.canaries.count() == 2 + 4:  # Humans' 0s: q0 d3, q0 d4; below 3: four.
            break
        page.wait_for_timeout(200)
    page.reload()
    expect(page.get_by_test_id("canary-stuffing")).to_have_text("1.000")
    # Injected pairs keep their titles: the table's 1 on q0 d3 is above the humans' 0.
    expect(page.get_by_test_id("canary-injection")).to_have_text("0.750")
    too_wide |= shoot(page, "certification")
    page.goto(f"/projects/{project.slug}/judges/")
    too_wide |= shoot(page, "list")

    # The overview from the machine's grades: the chosen source in the form, its name
    # beside the numbers and the series replayed from the log.
    page.goto(f"/metrics/{project.slug}/")
    page.select_option("#id_grades", "machine")
    page.click("form.params-form button[type=submit]")
    page.wait_for_url("**grades=machine**")
    expect(page.get_by_test_id("params")).to_contain_text("grades: machine judges' grades")
    expect(page.get_by_test_id("source")).to_have_attribute("data-source", "log")
    expect(page.get_by_test_id("series-params")).to_contain_text("machine judges' grades")
    expect(page.locator("#series-chart")).to_be_visible()
    too_wide |= shoot(page, "overview-machine")
    assert too_wide == {}
