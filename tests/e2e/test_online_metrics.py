"""The overview and the query detail draw the search log's chart on NDCG's time axis."""

import pytest

from tests.e2e.test_dashboards import chart_points, demo, log_in, urls  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

X_RANGE = """(id) => {
    const scale = Chart.getChart(document.getElementById(id)).scales.x;
    return [scale.min, scale.max];
}"""
LABELS = "(id) => Chart.getChart(document.getElementById(id)).data.datasets.map(s => s.label)"


def test_the_overview_shows_the_online_chart_beside_ndcg(page, urls):  # noqa: F811
    log_in(page, "analyst")
    page.goto(urls["overview"])

    # The demo log covers 14 days: a click-through and a success point for each,
    # plus the NDCG lines of the stored series.
    assert chart_points(page, "online-chart") > 2 * 14
    labels = page.evaluate(LABELS, "online-chart")
    assert labels[:2] == ["click-through rate", "successful sessions"]
    assert any(label.startswith("NDCG: ") for label in labels[2:])
    # Beside each list's NDCG, the share of its queries judged (issue 15 A2).
    assert any(label.startswith("queries judged: ") for label in labels[2:])
    assert page.evaluate(X_RANGE, "online-chart") == page.evaluate(X_RANGE, "series-chart")
    page.locator("#online-metrics summary").click()
    assert page.locator("#online-table tbody tr").count() == 14


def test_the_query_detail_shows_its_own_online_chart(page, urls):  # noqa: F811
    log_in(page, "analyst")
    page.goto(urls["query"])

    assert chart_points(page, "online-chart") > 0
    assert "judged@k: " + page.locator("h1").inner_text().split("”")[0].lstrip("“") in (
        page.evaluate(LABELS, "online-chart")
    )
    assert page.evaluate(X_RANGE, "online-chart") == page.evaluate(X_RANGE, "query-series-chart")
