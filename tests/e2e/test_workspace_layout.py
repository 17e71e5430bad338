"""The workspace pages fit a laptop (1280 px) and a phone (390 px): no page scrolls
sideways on a phone, and the scale editor's buttons and the upload drop zone work.

Screenshots of every page at both widths go to $SCREENSHOTS (workspace-<page>-<width>.png).
"""

import os
from io import StringIO

import pytest
from django.core.management import call_command

from judgements.models import Job, Project

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")
WIDTHS = (1280, 390)
# The score on line 3 is not a number (the rank column is ignored, as trec_eval ignores it).
BROKEN_RUN = "1 Q0 a 1 1 bm25\n1 Q0 b 2 1 bm25\n1 Q0 c 3 high bm25\n"


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


def pages(demo: Project) -> dict[str, str]:
    """Every workspace page, of the demo project and of an empty one."""
    empty = Project.objects.create(name="Empty", slug="empty")
    result_list = demo.result_lists.first()
    done = Job.objects.create(
        kind=Job.Kind.QUERIES, label="queries.csv", project=demo, status=Job.Status.DONE
    )
    Job.objects.filter(pk=done.pk).update(result={"rows": 40, "created": 38, "unchanged": 2})
    running = Job.objects.create(
        kind=Job.Kind.DOCUMENTS, label="documents.jsonl", project=demo, total=50 << 20
    )
    Job.objects.filter(pk=running.pk).update(status=Job.Status.RUNNING, done=20 << 20)
    return {
        "home": "/",
        "new-project": "/projects/new/",
        "project": f"/projects/{demo.slug}/",
        "settings": f"/projects/{demo.slug}/settings/",
        "uploads": f"/projects/{demo.slug}/uploads/",
        "raters": f"/metrics/{demo.slug}/raters/",
        "delete": f"/projects/{demo.slug}/delete/",
        "result-list-delete": f"/projects/{demo.slug}/result-lists/{result_list.pk}/delete/",
        "job-done": f"/jobs/{done.pk}/",
        "job-running": f"/jobs/{running.pk}/",
        "empty-project": f"/projects/{empty.slug}/",
        "empty-overview": f"/metrics/{empty.slug}/",
        "empty-compare": f"/metrics/{empty.slug}/compare/",
        "empty-raters": f"/metrics/{empty.slug}/raters/",
    }


def log_in(page):
    page.goto("/accounts/login/")
    page.fill("#id_username", "analyst")
    page.fill("#id_password", "relevance")
    page.click("button[type=submit]")
    page.wait_for_url("/")


def sideways(page) -> int:
    """How many pixels the page is wider than the window (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_no_workspace_page_scrolls_sideways_on_a_phone(page, demo):
    log_in(page)
    too_wide = {}
    for name, path in pages(demo).items():
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            response = page.goto(path)
            assert response.status == 200, (name, response.status)
            page.screenshot(path=f"{SCREENSHOTS}/workspace-{name}-{width}.png", full_page=True)
            if sideways(page) > 0:
                too_wide[f"{name} at {width}"] = sideways(page)
    assert too_wide == {}


def test_the_upload_errors_fit_a_phone(page, demo, tmp_path):
    log_in(page)
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"/projects/{demo.slug}/uploads/")
    run = tmp_path / "broken.run"
    run.write_text(BROKEN_RUN)
    section = page.locator("#result_list")
    section.locator("input[name=file]").set_input_files(str(run))
    section.locator("[data-upload-button]").click()
    page.wait_for_load_state()
    errors = page.locator("#result_list [data-testid=import-error]").all_inner_texts()
    assert any(error.split()[:2] == ["3", "score"] for error in errors), errors
    page.screenshot(path=f"{SCREENSHOTS}/workspace-upload-errors-390.png", full_page=True)
    assert sideways(page) <= 0


def test_the_scale_editor_moves_and_removes_grades(page, demo):
    log_in(page)
    page.goto(f"/projects/{demo.slug}/settings/")
    labels = page.locator("[data-scale-row] [data-column=label]")
    first, second = labels.nth(0).input_value(), labels.nth(1).input_value()
    # Moving grade 2 up makes it the first row, and the names follow the new order.
    page.locator("[data-scale-row]").nth(1).locator("[data-move=up]").click()
    assert page.input_value("[name=scale-0-label]") == second
    assert page.input_value("[name=scale-1-label]") == first
    page.locator("[data-scale-row]").nth(0).locator("[data-move=down]").click()
    # A new grade takes the next value up; removing it again leaves the scale as it was.
    page.click("[data-add-grade]")
    rows = page.locator("[data-scale-row]")
    new = rows.nth(rows.count() - 2)
    assert new.locator("[data-column=value]").input_value() == str(max(demo.grade_values) + 1)
    new.locator("[data-column=label]").fill("Extra")
    new.locator("[data-column=remove]").check()
    assert "removed" in (new.get_attribute("class") or "")
    page.click("button:text('Save settings')")
    page.wait_for_url(f"**/projects/{demo.slug}/")
    demo.refresh_from_db()
    assert [step["label"] for step in demo.scale][:2] == [first, second]
    assert "Extra" not in [step["label"] for step in demo.scale]


def test_a_file_dropped_on_the_form_is_uploaded(page, demo):
    log_in(page)
    page.goto(f"/projects/{demo.slug}/uploads/")
    zone = page.locator("#queries [data-dropzone]")
    # A drop as the browser makes one: a DataTransfer holding the file.
    transfer = page.evaluate_handle(
        """() => {
            const transfer = new DataTransfer();
            transfer.items.add(new File(["text\\nsleeping mat\\n"], "dropped.csv"));
            return transfer;
        }"""
    )
    zone.dispatch_event("drop", {"dataTransfer": transfer})
    assert "dropped.csv" in zone.locator("[data-dropzone-hint]").inner_text()
    page.locator("#queries [data-upload-button]").click()
    page.wait_for_load_state()
    assert "from dropped.csv: 1 rows read, 1 created" in page.inner_text(
        "#queries [data-testid=upload-outcome]"
    )
    assert demo.queries.filter(text="sleeping mat").exists()


def in_view(page, selector: str) -> bool:
    """Whether the element's top is inside the window, as the page opened."""
    return page.evaluate(
        "s => { const r = document.querySelector(s).getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }",
        selector,
    )


@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)])
def test_a_failed_upload_opens_at_its_card_with_one_line_for_another_format(
    page, demo, tmp_path, width, height
):
    log_in(page)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"/projects/{demo.slug}/uploads/")
    jsonl = tmp_path / "queries.jsonl"
    jsonl.write_text('{"id": "q1", "text": "tent"}\n{"id": "q2", "text": "stove"}\n')
    section = page.locator("#queries")
    section.locator("input[name=file]").set_input_files(str(jsonl))
    section.locator("[data-upload-button]").click()
    page.wait_for_load_state()
    assert page.url.endswith("#queries")
    assert in_view(page, "#queries [data-testid=import-errors]")
    errors = page.locator("#queries [data-testid=import-error]").all_inner_texts()
    assert len(errors) == 1, errors
    assert "looks like a JSON or JSON Lines file" in errors[0]
    assert '"id"' not in errors[0]
    page.screenshot(path=f"{SCREENSHOTS}/workspace-upload-failed-{width}.png")


@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)])
def test_an_upload_that_worked_says_so_in_its_card_in_view(page, demo, tmp_path, width, height):
    log_in(page)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"/projects/{demo.slug}/uploads/")
    run = tmp_path / "more.csv"
    run.write_text("text\nbivy sack\n")
    section = page.locator("#queries")
    section.locator("input[name=file]").set_input_files(str(run))
    section.locator("[data-upload-button]").click()
    page.wait_for_load_state()
    assert page.url.endswith("#queries")
    assert in_view(page, "#queries [data-testid=upload-outcome]")
    assert "1 created" in page.inner_text("#queries [data-testid=upload-outcome]")
    page.screenshot(path=f"{SCREENSHOTS}/workspace-upload-done-{width}.png")
