"""The compare page with unjudged hits, in headless Chromium at 1280 and 390 px: the
sentence at the top and the verdict in words, within the window.

Screenshots go to $SCREENSHOTS (compare-verdict-<width>.png).
"""

import os

import pytest

from tests.api.test_compare_verdict import QUERIES, project_of
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")


@pytest.mark.parametrize("width", [1280, 390])
def test_unjudged_hits_are_said_at_the_top_with_the_verdict(page, analyst, width):
    queries = [f"q{i}" for i in range(QUERIES)]
    project, made = project_of(
        "e2e-open",
        {
            "a": [(q, "good") for q in queries],
            "b": [(q, d) for q in queries for d in ("new", "good")],
        },
        [(q, "good", 3) for q in queries],
    )
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, analyst.username)

    page.goto(f"/metrics/{project.slug}/compare/?a={made['a'].pk}&b={made['b'].pk}&k=10")

    os.makedirs(SCREENSHOTS, exist_ok=True)
    page.screenshot(path=f"{SCREENSHOTS}/compare-verdict-{width}.png", full_page=True)
    warning = page.get_by_test_id("unjudged-warning")
    assert warning.is_visible()
    assert "12 of B's hits in the top k have no grade" in warning.inner_text()
    verdict = page.get_by_test_id("verdict")
    assert verdict.inner_text().startswith("Verdict: Not decided yet")
    # At the top: both within the first screen, above the form, at either width.
    for said in (warning, verdict):
        box = said.bounding_box()
        assert box["y"] + box["height"] <= 900, box
    assert warning.bounding_box()["y"] < page.locator("form.params-form").bounding_box()["y"]
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


@pytest.mark.parametrize("width", [1280, 390])
def test_the_overview_and_a_query_page_say_what_the_unjudged_hits_leave_open(page, analyst, width):
    queries = [f"q{i}" for i in range(QUERIES)]
    project, made = project_of(
        "e2e-open-query",
        {
            "a": [(q, "good") for q in queries],
            "b": [(q, d) for q in queries for d in ("new", "good")],
        },
        [(q, "good", 3) for q in queries],
    )
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, analyst.username)
    os.makedirs(SCREENSHOTS, exist_ok=True)

    page.goto(f"/metrics/{project.slug}/?k=10")
    page.screenshot(path=f"{SCREENSHOTS}/overview-open-{width}.png", full_page=True)
    assert page.get_by_test_id("list-unjudged").all_inner_texts() == ["0", "12"]
    assert page.get_by_test_id("queued").all_inner_texts() == ["0", "12"]
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0

    query = project.queries.get(external_id="q0")
    page.goto(f"/metrics/{project.slug}/{made['b'].pk}/queries/{query.pk}/?k=10")
    page.screenshot(path=f"{SCREENSHOTS}/query-open-{width}.png", full_page=True)
    said = page.get_by_test_id("open-hits")
    assert said.inner_text().startswith(
        "Not every hit is graded: 1 of the top 10 hits has no grade (1 in the raters' queue)."
    )
    box = said.bounding_box()
    assert box["y"] + box["height"] <= 900, box
    assert box["y"] < page.locator("form.params-form").bounding_box()["y"]
    assert "to" in page.get_by_test_id("open-range").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
