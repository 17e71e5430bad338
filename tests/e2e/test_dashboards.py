"""An analyst reads the dashboards in headless Chromium; a rater is turned away.

Uses the ``page`` and ``page_without_javascript`` fixtures of tests/e2e/conftest.py.
"""

from io import StringIO

import pytest
from django.core.management import call_command

from judgements.models import Project, QueuePair

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

OVERVIEW = "/metrics/outdoor-gear/"
SCREENSHOTS = "/tmp"


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


@pytest.fixture
def urls(demo):
    result_list = demo.result_lists.order_by("captured_at").last()
    query = demo.queries.order_by("text").first()
    return {
        "overview": OVERVIEW,
        "queries": f"{OVERVIEW}{result_list.pk}/queries/",
        "query": f"{OVERVIEW}{result_list.pk}/queries/{query.pk}/",
        "compare": f"{OVERVIEW}compare/",
        "raters": f"{OVERVIEW}raters/",
    }


def log_in(page, username):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "relevance")
    page.click("button[type=submit]")
    # A rater of a single project lands in its queue, everyone else on the projects page.
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def chart_points(page, canvas_id) -> int:
    """Data points of the Chart.js chart drawn on the canvas, after checking it has a size."""
    canvas = page.locator(f"#{canvas_id}")
    canvas.wait_for()
    box = canvas.bounding_box()
    assert box["width"] > 0 and box["height"] > 0
    return page.evaluate(
        """(id) => {
            const chart = Chart.getChart(document.getElementById(id));
            return chart ? chart.data.datasets.reduce((n, set) => n + set.data.length, 0) : -1;
        }""",
        canvas_id,
    )


def test_the_overview_draws_its_charts_and_changing_k_changes_the_numbers(page, urls):
    log_in(page, "analyst")
    page.goto(urls["overview"])

    assert chart_points(page, "series-chart") > 10
    assert chart_points(page, "capture-chart") == 4  # two means and two intervals
    means_at_10 = page.get_by_test_id("mean").all_inner_texts()
    page.screenshot(path=f"{SCREENSHOTS}/dashboards-overview.png", full_page=True)

    page.fill("#id_k", "3")
    with page.expect_navigation():
        page.click("form.params-form button[type=submit]")

    assert "k=3" in page.url
    assert page.get_by_test_id("params").inner_text().startswith("NDCG@3 ·")
    assert page.get_by_test_id("mean").all_inner_texts() != means_at_10
    assert chart_points(page, "capture-chart") == 4


def test_the_query_detail_shows_the_working_and_the_querys_series(page, urls):
    log_in(page, "analyst")
    page.goto(urls["queries"])
    first = page.locator("#query-table tbody tr").first.locator("a")
    query_text = first.inner_text()

    with page.expect_navigation():
        first.click()

    assert query_text in page.locator("h1").inner_text()
    assert page.locator("#working tbody tr").count() >= 10
    assert page.locator("#hits thead th").count() >= 4  # rank, document, raters, consensus
    assert chart_points(page, "query-series-chart") > 1
    page.screenshot(path=f"{SCREENSHOTS}/dashboards-query-detail.png", full_page=True)


def test_the_comparison_plots_every_query(page, urls, demo):
    log_in(page, "analyst")
    page.goto(urls["compare"])

    queries = int(page.locator("#summary + dl dd").nth(3).inner_text())
    assert chart_points(page, "scatter-chart") == queries + 2  # plus the diagonal's ends
    assert float(page.get_by_test_id("p-value").inner_text()) <= 1
    page.screenshot(path=f"{SCREENSHOTS}/dashboards-compare.png", full_page=True)


def test_the_raters_page_draws_each_raters_grades(page, urls):
    log_in(page, "analyst")
    page.goto(urls["raters"])

    assert chart_points(page, "distribution-chart") == 3 * 4  # three raters, four grades
    assert page.get_by_test_id("alpha").inner_text() != "—"
    page.screenshot(path=f"{SCREENSHOTS}/dashboards-raters.png", full_page=True)


def test_an_analyst_sends_a_disputed_pair_back_for_one_more_grade(page, urls, demo):
    log_in(page, "analyst")
    page.goto(urls["raters"])
    first = page.get_by_test_id("disputed-pair").first
    query_id = first.locator("input[name=query]").get_attribute("value")
    document_id = first.locator("input[name=document]").get_attribute("value")

    with page.expect_navigation():
        first.get_by_test_id("request-one").click()

    assert page.url.endswith(urls["raters"])
    assert "1 pair sent back for one more grade." in page.locator(".messages").inner_text()
    pair = QueuePair.objects.get(query_id=query_id, document_id=document_id)
    assert (pair.needed, pair.wanted) == (1, pair.grades + 1)
    waiting = page.get_by_test_id("waiting")
    assert waiting.count() == 1
    assert waiting.inner_text() == "Needs 1 more grade"
    page.screenshot(path=f"{SCREENSHOTS}/dashboards-raters-sent-back.png", full_page=True)


def test_a_rater_is_refused_every_dashboard(page, urls):
    log_in(page, "rater_ann")

    for url in urls.values():
        response = page.goto(url)
        assert response.status == 403, url
        assert page.locator("canvas").count() == 0


def test_an_anonymous_visitor_is_sent_to_log_in(page, urls):
    for url in urls.values():
        page.goto(url)
        assert page.url.split("?")[0].endswith("/accounts/login/"), url


def test_the_query_table_sorts_and_filters_without_javascript(page_without_javascript, urls):
    page = page_without_javascript
    log_in(page, "analyst")
    page.goto(urls["queries"])
    ndcg = [
        float(text)
        for text in page.locator("#query-table tbody td:nth-child(2)").all_inner_texts()
    ]
    assert ndcg == sorted(ndcg)

    # Worst first is the default, so the first click on NDCG sorts best first.
    with page.expect_navigation():
        page.click("#query-table thead th:nth-child(2) a")

    again = [
        float(text)
        for text in page.locator("#query-table tbody td:nth-child(2)").all_inner_texts()
    ]
    assert again == sorted(ndcg, reverse=True)
    page.fill("#id_q", "tent")
    with page.expect_navigation():
        page.click("form.params-form button[type=submit]")
    texts = page.locator("#query-table tbody td:nth-child(1)").all_inner_texts()
    assert texts and all("tent" in text.lower() for text in texts)
