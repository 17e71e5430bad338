"""The compare page under a mean over all queries, in headless Chromium at 1280 and 390 px:
trec_eval's results.test against results.trunc, which no longer returns query 302.

Screenshots go to $SCREENSHOTS (compare-over-all-<width>.png).
"""

import os

import pytest

from tests.api.test_compare import TREC_EVAL_PARAMS, trec_eval_lists
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_counts_the_dropped_query_and_fits_the_window(page, analyst, width):
    project, production, candidate = trec_eval_lists()
    params = "&".join(f"{name}={value}" for name, value in TREC_EVAL_PARAMS.items())
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, analyst.username)

    page.goto(f"/metrics/{project.slug}/compare/?a={production.pk}&b={candidate.pk}&{params}")

    os.makedirs(SCREENSHOTS, exist_ok=True)
    page.screenshot(path=f"{SCREENSHOTS}/compare-over-all-{width}.png", full_page=True)
    summary = page.locator("#summary").inner_text()
    assert "0.3016" in summary and "0.1717" in summary
    unreturned = page.get_by_test_id("unreturned")
    assert unreturned.inner_text() == "A did not return 0 and B did not return 1"
    assert unreturned.is_visible()
    assert "302" in page.locator("#deltas").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
