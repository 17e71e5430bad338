"""One header and one set of project tabs on every project page (issue 42, point 6): the
dashboards and machine-judge pages have the project's tabs, the crumb's project name is a
link, and an empty project's queue links to its Uploads page.

Screenshots at 1280 and 390 px go to $SCREENSHOTS (header-<page>-<width>.png).
"""

import os
from io import StringIO

import pytest
from django.core.management import call_command

from judgements.models import Project
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")
TABS = [
    "Project",
    "Uploads",
    "Raters",
    "Machine judges",
    "Search engines",
    "Dashboards",
    "Settings",
]


def test_every_project_page_has_the_projects_header_and_tabs(page):
    call_command("load_demo", stdout=StringIO())
    demo = Project.objects.get(slug="outdoor-gear")
    judge = demo.machine_judges.get()
    pages = {
        "overview": f"/metrics/{demo.slug}/",
        "compare": f"/metrics/{demo.slug}/compare/",
        "raters": f"/metrics/{demo.slug}/raters/",
        "judges": f"/projects/{demo.slug}/judges/",
        "judge": f"/projects/{demo.slug}/judges/{judge.pk}/",
        "uploads": f"/projects/{demo.slug}/uploads/",
    }
    log_in(page, "analyst", "relevance")
    for name, path in pages.items():
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(path)
            page.screenshot(path=f"{SCREENSHOTS}/header-{name}-{width}.png")
            tabs = page.get_by_role("navigation", name=f"Pages of {demo.name}")
            assert tabs.get_by_role("link").all_inner_texts() == TABS, path
            assert page.locator("header.dash-header").count() == 1, path
        page.get_by_test_id("crumb-project").click()
        page.wait_for_url(f"**/projects/{demo.slug}/")


def test_an_empty_projects_queue_links_to_its_uploads_page(page):
    empty = Project.objects.create(name="Empty", slug="empty")
    call_command("load_demo", stdout=StringIO())
    log_in(page, "analyst", "relevance")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/rate/{empty.slug}/")
        page.screenshot(path=f"{SCREENSHOTS}/header-empty-queue-{width}.png")
        assert "manage.py" not in page.inner_text("#rating")
    page.get_by_test_id("to-uploads").click()
    page.wait_for_url(f"**/projects/{empty.slug}/uploads/")
