"""NDCG over time in headless Chromium: coverage drawn beside it, revisions, phone widths.

An analyst reads the demo. Screenshots go to ``$SCREENSHOTS_DIR`` (default /tmp).
"""

import os
from io import StringIO

import pytest
from django.core.management import call_command

from judgements.models import Judgement, Project
from metrics.dashboards.evaluations import epoch_ms
from metrics.models import MetricPoint
from metrics.registry import project_spec

from .test_dashboards import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS_DIR", "/tmp")
OVERVIEW = "/metrics/outdoor-gear/"

# The chart's datasets as drawn: label, y axis and every (x, y) point.
DATASETS_JS = """(id) => Chart.getChart(document.getElementById(id)).data.datasets.map(
    (set) => ({label: set.label, axis: set.yAxisID, points: set.data.map((p) => [p.x, p.y])}))"""


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


def drawn(page, canvas_id) -> dict[str, dict]:
    canvas = page.locator(f"#{canvas_id}")
    canvas.wait_for()
    box = canvas.bounding_box()
    assert box["width"] > 0 and box["height"] > 0
    return {set["label"]: set for set in page.evaluate(DATASETS_JS, canvas_id)}


def stored_overall(result_list, spec):
    return MetricPoint.objects.filter(
        result_list=result_list, metric=spec.name, query__isnull=True
    ).order_by("as_of")


# Elements of the page's content reaching past the viewport's right edge, outside boxes
# that scroll sideways. The top bar (base.html) is the rating pages' work (issue 15 B3).
TOO_WIDE_JS = """() => [...document.querySelectorAll("main *")]
    .filter((e) => !e.closest(".table-scroll") && e.getBoundingClientRect().right > innerWidth + 1)
    .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`)"""


def too_wide(page) -> list[str]:
    """What in the page's content would make it scroll sideways (nothing, when it fits)."""
    return page.evaluate(TOO_WIDE_JS)


def test_the_overview_draws_coverage_beside_ndcg_as_stored(page, demo):
    log_in(page, "analyst")
    page.goto(OVERVIEW)

    datasets = drawn(page, "series-chart")

    spec = project_spec(demo)
    for result_list in demo.result_lists.all():
        points = list(stored_overall(result_list, spec))
        assert len(points) >= 14  # a fortnight of daily buckets
        judged = datasets[f"{result_list.name}: queries judged"]
        at_k = datasets[f"{result_list.name}: judged@k"]
        mean = datasets[result_list.name]
        assert judged["axis"] == at_k["axis"] == "coverage" and mean["axis"] == "y"
        assert judged["points"] == [
            [epoch_ms(p.as_of), p.queries_judged / p.queries_returned] for p in points
        ]
        assert at_k["points"] == [[epoch_ms(p.as_of), p.judged / p.retrieved] for p in points]
        assert mean["points"] == [
            [epoch_ms(p.as_of), p.value if p.queries else None] for p in points
        ]
        band = datasets[f"{result_list.name}: CI high"]["points"]
        assert band == [[epoch_ms(p.as_of), p.ci_high if p.queries >= 2 else None] for p in points]
        # Grades arrive over the fortnight: coverage rises from its first point to its last.
        assert judged["points"][0][1] < judged["points"][-1][1]
    caption = page.locator("#series-caption").inner_text()
    assert caption.startswith("Early points rest on fewer queries")
    assert page.locator("#reading-aid").is_visible()
    page.locator("#series-chart").scroll_into_view_if_needed()
    page.screenshot(path=f"{SCREENSHOTS}/overtime-overview-1280.png", full_page=True)
    page.locator("figure.chart").first.screenshot(path=f"{SCREENSHOTS}/overtime-chart-1280.png")


def test_the_overview_fits_a_phone_and_its_chart_is_drawn_there(page, demo):
    log_in(page, "analyst")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(OVERVIEW)

    datasets = drawn(page, "series-chart")

    assert any(label.endswith(": queries judged") for label in datasets)
    assert not (wide := too_wide(page)), " ".join(wide)
    page.screenshot(path=f"{SCREENSHOTS}/overtime-overview-390.png", full_page=True)
    page.locator("figure.chart").first.screenshot(path=f"{SCREENSHOTS}/overtime-chart-390.png")


def test_the_query_detail_draws_judged_at_k_and_lists_the_revisions(page, demo):
    revised = Judgement.objects.filter(note__startswith="Changed my mind").first()
    result_list = demo.result_lists.order_by("captured_at").last()
    url = f"{OVERVIEW}{result_list.pk}/queries/{revised.query_id}/"
    log_in(page, "analyst")

    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        datasets = drawn(page, "query-series-chart")

        points = MetricPoint.objects.filter(
            result_list=result_list, query_id=revised.query_id, metric=project_spec(demo).name
        ).order_by("as_of")
        assert datasets["judged@k"]["points"] == [
            [epoch_ms(p.as_of), p.judged / p.retrieved] for p in points
        ]
        # Before its first grade the query's NDCG is no measurement: left blank, not 0.
        assert datasets["NDCG"]["points"] == [
            [epoch_ms(p.as_of), p.value if p.judgements else None] for p in points
        ]
        assert datasets["NDCG"]["points"][0][1] is None
        rows = page.locator("#revisions tbody tr")
        assert rows.count() >= 1
        assert "Changed my mind after re-reading the description." in rows.all_inner_texts()[-1]
        assert not (wide := too_wide(page)), " ".join(wide)
        page.screenshot(path=f"{SCREENSHOTS}/overtime-query-{width}.png", full_page=True)
        figure = page.locator("figure.chart").filter(has=page.locator("#query-series-chart"))
        figure.screenshot(path=f"{SCREENSHOTS}/overtime-query-chart-{width}.png")
        page.locator("#revisions").screenshot(path=f"{SCREENSHOTS}/overtime-revisions-{width}.png")
