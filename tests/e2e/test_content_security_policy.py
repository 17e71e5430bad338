"""Every page works under the Content-Security-Policy, in headless Chromium.

The policy forbids inline scripts, inline styles and style attributes. Chromium reports
each thing it blocks as a ``securitypolicyviolation`` event; the pages record them from
the start (an init script) and the test reads them after each page: none on any page,
with the charts drawn, an htmx swap done and Swagger UI rendered.
"""

import contextlib
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from judgements.models import Project
from tests.config.test_production import page_paths
from tests.e2e.test_dashboards import chart_points, demo, log_in
from tests.e2e.test_rating_flow import press_and_wait, shown_pair

__all__ = ["demo"]  # a fixture, used by name
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.cspViolations.push(
    `${event.violatedDirective} blocked ${event.blockedURI || "inline"} ` +
    `at ${event.sourceFile}:${event.lineNumber} ${event.sample}`);
});
"""


@pytest.fixture
def watched(page):
    page.add_init_script(RECORD_VIOLATIONS)
    return page


def violations(page) -> list[str]:
    page.wait_for_load_state("load")
    # A page that polls (a running job's) is never idle: what it loaded then counts.
    with contextlib.suppress(PlaywrightTimeoutError):
        page.wait_for_load_state("networkidle", timeout=5_000)
    return page.evaluate("window.cspViolations")


# Routes that only take a POST, and downloads (a file, not a page).
POST_ONLY = r"(answer|skip|undo|release|request-grades|guidelines-preview|export)/$"


def page_urls(project: Project) -> list[str]:
    """Every page the app routes outside the API that a GET shows, plus the admin's."""
    urls = [
        path
        for path in page_paths(project)
        if "logout" not in path and not re.search(POST_ONLY, path)
    ]
    admin = ["/admin/", "/admin/judgements/project/", f"/admin/judgements/project/{project.pk}/"]
    return [*urls, *admin, f"{admin[2]}change/", "/api/token/"]


def test_no_page_breaks_the_policy(watched, demo):
    log_in(watched, "admin")
    assert violations(watched) == []
    for url in page_urls(demo):
        head = watched.request.get(url)
        if head.status == 405 or "attachment" in head.headers.get("content-disposition", ""):
            continue  # A POST-only action or a download: no page to look at.
        response = watched.goto(url)
        assert response.status in (200, 400), (url, response.status)
        policy = response.headers["content-security-policy"]
        assert "unsafe-inline" not in policy
        assert violations(watched) == [], url


def test_the_charts_are_drawn_under_the_policy(watched, demo):
    log_in(watched, "analyst")
    watched.goto(f"/metrics/{demo.slug}/")
    assert chart_points(watched, "series-chart") > 0
    result_list = demo.result_lists.order_by("pk").first()
    query = result_list.hits.order_by("pk").first().query_id
    watched.goto(f"/metrics/{demo.slug}/{result_list.pk}/queries/{query}/")
    assert chart_points(watched, "query-series-chart") > 0
    watched.goto(f"/metrics/{demo.slug}/raters/")
    assert chart_points(watched, "distribution-chart") > 0
    assert violations(watched) == []


def test_htmx_swaps_the_next_pair_in_under_the_policy(watched, demo):
    log_in(watched, "rater_ann")
    watched.goto(f"/rate/{demo.slug}/")
    watched.evaluate("window.notReloaded = true")
    first = shown_pair(watched)
    press_and_wait(watched, "2")
    assert shown_pair(watched) != first
    assert watched.evaluate("window.notReloaded") is True
    # The bar is a <progress> element: its value is an attribute, no style needed.
    assert watched.locator("#rating progress").evaluate("bar => bar.position") > 0
    assert violations(watched) == []


def test_swagger_ui_renders_under_the_policy(watched, demo):
    log_in(watched, "analyst")
    watched.goto("/api/docs/")
    watched.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    assert watched.locator(".swagger-ui .opblock").count() >= 20
    assert violations(watched) == []
