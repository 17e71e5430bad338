"""Small things that looked broken (issue 42, point 7), in headless Chromium at 1280
and 390 px; screenshots in /tmp.

Who may see what: the demo's analyst makes a token and reads the API docs; rater_ann
rates and undoes.
"""

from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.e2e.test_rating_flow import RATE, log_in, press_and_wait

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())


@pytest.mark.parametrize("width", [1280, 390])
def test_the_new_token_has_a_copy_button_that_copies_it(browser, live_server, demo, width):
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        log_in(page, "analyst")
        page.goto("/api/token/")
        page.get_by_role("button", name="Create a token").click()
        key = page.locator("#token-key").inner_text().strip()

        page.get_by_role("button", name="Copy the token").click()

        # The clipboard's write is a promise: the status says so once it resolved.
        expect(page.get_by_role("status")).to_have_text("Copied.")
        assert page.evaluate("navigator.clipboard.readText()") == key
        page.screenshot(path=f"/tmp/i42b-token-{width}.png", full_page=True)
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_api_docs_link_back_to_the_app_and_every_page_has_a_favicon(page, demo, width):
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "analyst")

    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .info")
    page.screenshot(path=f"/tmp/i42b-api-docs-{width}.png")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    page.get_by_role("link", name="← Relevance Judge").click()
    page.wait_for_url(lambda url: "/api/docs/" not in url)

    assert page.request.get(icon).status == 200
    assert page.locator("link[rel=icon]").get_attribute("href") == icon
    assert page.request.get(icon).headers["content-type"].startswith("image/svg")


def test_an_undo_is_announced_once(page, demo):
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, "rater_ann")
    page.goto(RATE)
    press_and_wait(page, "2")

    press_and_wait(page, "u")

    live = page.locator("#rating[aria-live]").inner_text()
    assert live.count("Undone") == 1, live
    page.screenshot(path="/tmp/i42b-undo-390.png")


@pytest.mark.parametrize("width", [1280, 390])
def test_my_judgements_filter_count_and_show_a_pairs_history(page, demo, width):
    page.set_viewport_size({"width": width, "height": 844})
    log_in(page, "rater_ann")
    page.goto(RATE)
    press_and_wait(page, "1")
    press_and_wait(page, "u")
    press_and_wait(page, "3")
    page.goto(RATE + "mine/")
    total = page.get_by_test_id("total").inner_text()
    query = page.locator("table.mine tbody tr").first.locator("td").first.inner_text()

    page.get_by_label("Query or query id").fill(query.split()[-1])
    page.get_by_role("button", name="Filter", exact=True).click()
    page.wait_for_load_state()

    history = page.get_by_test_id("history").first
    history.locator("summary").click()
    assert "1 " in history.inner_text() and "3 " in history.inner_text()
    assert page.get_by_test_id("total").inner_text() != "" and total.split()[0].isdigit()
    selects = page.locator("select[name=answer]")
    names = {selects.nth(i).get_attribute("aria-label") for i in range(selects.count())}
    assert len(names) == selects.count()
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    page.screenshot(path=f"/tmp/i42b-mine-{width}.png", full_page=True)
    page.screenshot(path=f"/tmp/i42b-mine-{width}-view.png")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_pages_touched_render_at_both_widths(page, demo, width):
    """The project page's downloads, the settings' "Can't tell" text, bulk grading and
    the raters page, looked at in screenshots; none scrolls sideways."""
    from judgements.models import Project

    Project.objects.create(name="Empty", slug="empty")
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "analyst")
    shots = {
        "empty-project": "/projects/empty/",
        "settings": "/projects/outdoor-gear/settings/",
        "bulk": "/projects/outdoor-gear/bulk/",
        "raters": "/metrics/outdoor-gear/raters/",
    }
    for name, url in shots.items():
        page.goto(url)
        page.screenshot(path=f"/tmp/i42b-{name}-{width}.png", full_page=True)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (name, overflow)
    page.goto(shots["empty-project"])
    assert page.get_by_test_id("no-downloads").is_visible()
    page.goto(shots["settings"])
    field = page.get_by_label("“Can't tell” explanation")
    assert field.input_value() == "The listing does not say enough."
    field.scroll_into_view_if_needed()
    page.screenshot(path=f"/tmp/i42b-settings-{width}-view.png")
