"""A demo rater grades in headless Chromium with the keyboard, and without JavaScript."""

from io import StringIO

import pytest
from django.core.management import call_command

from judgements.models import Judgement, Project

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

RATE = "/rate/outdoor-gear/"


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


def log_in(page, username):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "relevance")
    page.click("button[type=submit]")
    # A rater of a single project lands in its queue, everyone else on the projects page.
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def shown_pair(page) -> tuple[int, int]:
    pair = page.locator("article.pair")
    return int(pair.get_attribute("data-query")), int(pair.get_attribute("data-document"))


def press_and_wait(page, key):
    """Press ``key``, wait until htmx has swapped in the response; return its body."""
    with page.expect_response(lambda response: response.url.endswith(RATE)) as answer:
        page.keyboard.press(key)
    page.wait_for_selector("#rating:not(.htmx-request)")
    # A selector wait, not wait_for_function: its predicate is compiled with new Function
    # in the page, which the Content-Security-Policy (no 'unsafe-eval') refuses.
    page.wait_for_selector(".htmx-swapping, .htmx-settling", state="detached")
    return answer.value.text()


def progress(page) -> dict[str, int]:
    return {name: int(page.get_by_test_id(name).inner_text()) for name in ("done", "today")}


def web_events(username):
    events = Judgement.objects.filter(rater__username=username, source="web").order_by("id")
    return [(e.query_id, e.document_id, e.kind, e.grade, e.note) for e in events]


def test_a_rater_grades_with_the_keyboard_without_page_reloads(page, demo):
    log_in(page, "rater_ann")
    page.goto(RATE)
    page.evaluate("window.notReloaded = true")
    before = progress(page)
    value_before = page.get_by_role("progressbar").get_attribute("value")
    expected = []

    a = shown_pair(page)
    body = press_and_wait(page, "2")
    expected.append((*a, "grade", 2, ""))
    # The redirect after the answer keeps htmx's header: only the rating part comes back.
    assert body.lstrip().startswith('<section id="rating"')

    b = shown_pair(page)
    press_and_wait(page, "?")
    expected.append((*b, "cant_tell", None, ""))

    c = shown_pair(page)
    press_and_wait(page, "s")
    assert shown_pair(page) != c

    d = shown_pair(page)
    press_and_wait(page, "3")
    press_and_wait(page, "u")
    expected += [(*d, "grade", 3, ""), (*d, "retract", None, "")]
    assert shown_pair(page) == d

    # Keys typed into the note are text, not answers; Escape hands the keys back.
    page.fill("input[name=note]", "")
    page.locator("input[name=note]").press_sequentially("only 1 size 2 colours")
    page.keyboard.press("Escape")
    assert shown_pair(page) == d
    press_and_wait(page, "1")
    expected.append((*d, "grade", 1, "only 1 size 2 colours"))

    for key in ("0", "2"):
        pair = shown_pair(page)
        press_and_wait(page, key)
        expected.append((*pair, "grade", int(key), ""))

    assert web_events("rater_ann") == expected
    assert len({(q, d) for q, d, *_ in expected}) == 5
    assert c not in {(q, d) for q, d, *_ in expected}
    after = progress(page)
    assert after == {"done": before["done"] + 5, "today": before["today"] + 5}
    assert page.get_by_role("progressbar").get_attribute("value") != value_before
    assert page.evaluate("window.notReloaded") is True
    page.screenshot(path="/tmp/rj-rate-page.png", full_page=True)

    page.goto("/rate/outdoor-gear/mine/")
    rows = page.locator("table.mine tbody tr")
    assert rows.count() == 25
    assert "0 Irrelevant" in rows.nth(1).inner_text()
    assert "2 Relevant" in rows.first.inner_text()
    page.screenshot(path="/tmp/rj-my-judgements.png", full_page=True)


def test_g_toggles_the_guidelines(page, demo):
    log_in(page, "rater_ben")
    page.goto(RATE)
    guidelines = page.locator("#guidelines")
    assert guidelines.get_attribute("open") is None
    page.keyboard.press("g")
    assert guidelines.get_attribute("open") is not None
    assert page.get_by_text("How to grade outdoor gear search results").is_visible()


def test_the_rating_page_works_without_javascript(page_without_javascript, demo):
    page = page_without_javascript
    log_in(page, "rater_cai")
    page.goto(RATE)
    pair = shown_pair(page)
    page.get_by_role("button", name="2 Relevant").click()
    page.wait_for_load_state()
    assert shown_pair(page) != pair
    assert web_events("rater_cai") == [(*pair, "grade", 2, "")]


def test_an_image_that_cannot_load_is_a_plain_box_not_a_broken_frame(page, demo):
    # Every demo image points at a shop that does not exist (and the page's requests
    # outside the live server are aborted): make the first pair one of them.
    demo.documents.update(image_url="https://shop.example.com/img/missing.jpg")
    log_in(page, "rater_ann")
    page.goto(RATE)
    page.wait_for_selector("#rating .hit-image-missing")
    assert page.locator("#rating img.hit-image").count() == 0
    assert page.locator("#rating .hit-image-missing").inner_text() == "Image not available"
    # The pair after an answer comes through htmx and is checked the same way.
    press_and_wait(page, "1")
    page.wait_for_selector("#rating .hit-image-missing")
    assert page.locator("#rating img.hit-image").count() == 0
