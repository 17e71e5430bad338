"""Every measure beside NDCG and the team's query ids on the dashboards, in headless
Chromium at 1280 and 390 px (issue 42, points 2 and 4); screenshots in /tmp.

Who may see what: the demo's analyst reads every dashboard.
"""

from io import StringIO

import pytest
from django.core.management import call_command

from judgements.models import Project
from tests.e2e.test_dashboards import OVERVIEW, log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

LONG = "a query text far longer than a table cell, " * 6


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    project = Project.objects.get(slug="outdoor-gear")
    for number, query in enumerate(project.queries.order_by("text"), start=1):
        query.external_id = str(number)
        query.save(update_fields=["external_id"])
    first = project.queries.order_by("text").first()
    first.text = f"{first.text} {LONG}".strip()
    first.save(update_fields=["text"])
    return project


def pages(project) -> dict[str, str]:
    result_list = project.result_lists.order_by("captured_at").last()
    query = project.queries.order_by("text").first()
    return {
        "overview": OVERVIEW,
        "queries": f"{OVERVIEW}{result_list.pk}/queries/",
        "query": f"{OVERVIEW}{result_list.pk}/queries/{query.pk}/",
        "compare": f"{OVERVIEW}compare/",
    }


@pytest.mark.parametrize("width", [1280, 390])
def test_every_dashboard_shows_the_measures_and_the_query_ids(page, demo, width):
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "analyst")

    every = "&".join(f"measures={m}" for m in ("precision", "average_precision",
                                                "reciprocal_rank", "err"))  # fmt: skip
    for name, url in pages(demo).items():
        page.goto(f"{url}?{every}")
        page.screenshot(path=f"/tmp/i42b-measures-{name}-{width}.png", full_page=True)
        page.locator("[data-measure]").last.scroll_into_view_if_needed()
        page.screenshot(path=f"/tmp/i42b-measures-{name}-{width}-view.png")
        for measure in ("precision", "average_precision", "reciprocal_rank", "err"):
            assert page.locator(f"[data-measure={measure}]").count() > 0, (name, measure)
        assert page.locator("[data-testid=measures-line], #measures").count() > 0
        if name != "overview":
            assert page.get_by_test_id("qid").count() > 0, name
        # Tables scroll inside their box: the page itself never scrolls sideways.
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (name, overflow)


def test_a_measure_checked_joins_the_table_and_stays_when_sorted(page, demo):
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, "analyst")
    page.goto(pages(demo)["queries"])
    # NDCG alone by default: the others read every hit's grade.
    assert page.locator("[data-measure]").count() == 0

    page.get_by_label("ERR@k").check()
    page.get_by_label("AP@k").check()
    page.get_by_role("button", name="Apply").click()
    page.wait_for_load_state()

    assert page.locator("[data-measure=err]").count() > 0
    assert page.locator("[data-measure=precision]").count() == 0
    # The choice stays when the table is sorted by a column header.
    page.get_by_role("link", name="AP@10").click()
    page.wait_for_load_state()
    assert page.locator("[data-measure=err]").count() > 0
    assert (
        page.get_by_label("ERR@k").is_checked()
        and not page.get_by_label("P@k", exact=True).is_checked()
    )


def test_a_long_query_text_is_cut_and_whole_on_hover(page, demo):
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, "analyst")
    page.goto(pages(demo)["queries"] + "?q=1")

    link = page.locator("#query-table a.query-text[title*='far longer']")
    text = link.get_attribute("title")

    assert LONG.strip() in text
    assert "1" in page.get_by_test_id("qid").all_inner_texts()
    box = link.bounding_box()
    assert box["height"] < 30 and box["width"] < 500
    page.screenshot(path="/tmp/i42b-qid-search-1280.png", full_page=True)


def test_on_a_touch_screen_a_tap_opens_a_cut_query_text_and_the_next_follows_it(
    browser, live_server, demo
):
    """No hover on a phone: the first tap on a cut text shows it whole in place, the
    second opens the query's page."""
    from tests.e2e.conftest import new_context

    context = new_context(
        browser, live_server, viewport={"width": 390, "height": 844}, has_touch=True,
        is_mobile=True,
    )  # fmt: skip
    try:
        page = context.new_page()
        log_in(page, "analyst")
        page.goto(pages(demo)["queries"] + "?q=1")
        link = page.locator("#query-table a.query-text[title*='far longer']")
        cut = link.bounding_box()["height"]
        address = page.url

        link.tap()
        page.wait_for_timeout(300)  # a navigation, were there one, would have begun

        assert page.url == address
        assert link.bounding_box()["height"] > 2 * cut  # the whole text, wrapped
        page.screenshot(path="/tmp/query-text-tapped-390.png", full_page=True)
        link.tap()
        page.wait_for_url(f"**/queries/{demo.queries.order_by('text').first().pk}/**")
    finally:
        context.close()


def test_a_time_axis_over_less_than_a_day_spans_that_day(page, demo):
    log_in(page, "analyst")
    page.goto(OVERVIEW)

    day = 24 * 3600 * 1000
    one = page.evaluate("window.timeAxes.span([1764633600000])")
    same_day = page.evaluate("window.timeAxes.span([1764633600000, 1764640800000])")
    days = page.evaluate(f"window.timeAxes.span([1764633600000, {1764633600000 + 3 * day}])")

    assert one == {"min": 1764633600000 - day / 2, "max": 1764633600000 + day / 2}
    assert same_day["max"] - same_day["min"] == day
    assert days == {}
    # The drawn chart's axis follows the data it has (the demo's weeks).
    width = page.evaluate(
        "(() => { const x = Chart.getChart(document.getElementById('series-chart')).scales.x;"
        " return x.max - x.min; })()"
    )
    assert 3 * day < width < 400 * day
