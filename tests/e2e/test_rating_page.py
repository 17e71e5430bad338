"""The rating page without traps (issue 15 B), in headless Chromium: the note, bulk
grading's first load, a phone's width, the end of the queue, skips, undo, empty states.

ann, ben and cai are the demo's raters; "analyst" reads the dashboards.
"""

import os
import time
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from judgements.models import Judgement, Project, QueueLease, QueueSkip
from tests.e2e.conftest import new_context
from tests.e2e.test_rating_flow import RATE, log_in, press_and_wait, shown_pair, web_events
from tests.factories import (
    DocumentFactory,
    HitFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Where the screenshots to look at go: RJ_SCREENSHOTS names a folder to keep them in.
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def screens(tmp_path) -> Path:
    folder = Path(os.environ.get("RJ_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


def rater_named(username):
    user = UserFactory(username=username, roles=["rater"])
    user.set_password("relevance")
    user.save()
    return user


@contextmanager
def browsing(browser, live_server, username=None, **options):
    """A page of a browser of its own (its own cookies), logged in as ``username``."""
    context = new_context(browser, live_server, **options)
    try:
        page = context.new_page()
        if username:
            log_in(page, username)
        yield page
    finally:
        context.close()


def test_enter_in_the_note_never_answers_and_n_goes_to_the_note(page, demo):
    log_in(page, "rater_ann")
    page.goto(RATE)
    pair = shown_pair(page)
    posts = []
    page.on(
        "request", lambda request: posts.append(request.url) if request.method == "POST" else None
    )
    note = page.locator("input[name=note]")

    page.keyboard.press("n")
    assert page.evaluate("document.activeElement.name") == "note"
    assert note.input_value() == ""  # The n went to the focus, not into the note.
    page.keyboard.type("faded colour")
    page.keyboard.press("Enter")
    page.wait_for_timeout(500)
    assert posts == []
    assert shown_pair(page) == pair
    assert web_events("rater_ann") == []
    # Enter left the note, so the next key is a grade again, saved with the note.
    assert page.evaluate("document.activeElement.name") != "note"
    press_and_wait(page, "2")
    assert web_events("rater_ann") == [(*pair, "grade", 2, "faded colour")]


def test_enter_in_the_note_never_answers_without_javascript(page_without_javascript, demo):
    page = page_without_javascript
    log_in(page, "rater_cai")
    page.goto(RATE)
    pair = shown_pair(page)
    page.fill("input[name=note]", "no javascript")
    page.press("input[name=note]", "Enter")
    page.wait_for_timeout(500)
    assert shown_pair(page) == pair
    assert web_events("rater_cai") == []


def test_bulk_grading_first_load_shows_what_its_filters_say(page, demo):
    log_in(page, "analyst")
    page.goto(f"/projects/{demo.slug}/bulk/")
    first = page.locator("table.data tbody tr").count()
    assert first > 0
    assert page.get_by_label("Only unjudged").is_checked() is False
    assert "No pairs" not in page.content()
    with page.expect_navigation():
        page.get_by_role("button", name="Show").click()
    assert page.locator("table.data tbody tr").count() == first


# The elements that stick out past the right edge, unless a box that scrolls holds them.
STICKING_OUT = """(width) => [...document.querySelectorAll("body *")].filter((element) => {
  const box = element.getBoundingClientRect();
  if (box.width === 0 || box.right <= width + 0.5) return false;
  for (let up = element.parentElement; up; up = up.parentElement) {
    if (getComputedStyle(up).overflowX !== "visible"
        && up.getBoundingClientRect().right <= width + 0.5) return false;
  }
  return true;
}).slice(0, 5).map((element) => `${element.tagName.toLowerCase()}.${element.className}`)"""


def page_fits(page) -> None:
    """No sideways scrolling, a one-line top bar, and Log out on screen."""
    width = page.viewport_size["width"]
    overflow = page.evaluate("document.documentElement.scrollWidth")
    assert overflow <= width, (
        f"{page.url} is {overflow} px wide at {width} px: {page.evaluate(STICKING_OUT, width)}"
    )
    # Django's own account pages (password reset) use the admin's layout, not ours.
    if page.locator("header.topbar").count() == 0:
        return
    bar = page.locator("header.topbar").bounding_box()
    assert bar["height"] < 60, f"{page.url}: the top bar wraps ({bar['height']} px)"
    log_out = page.get_by_role("button", name="Log out")
    if log_out.count():
        box = log_out.bounding_box()
        assert log_out.is_visible() and box["x"] + box["width"] <= width, page.url


@pytest.mark.parametrize("width", [360, 390])
def test_every_page_fits_a_phone(browser, live_server, demo, width):
    from tests.config.test_production import page_paths

    with browsing(browser, live_server, viewport={"width": width, "height": 800}) as page:
        page.goto("/accounts/login/")
        page_fits(page)
        log_in(page, "analyst")
        for path in [*page_paths(demo), "/api/token/"]:
            response = page.request.get(path)
            if response.status == 405:
                continue  # A POST-only action has no page.
            if "attachment" in response.headers.get("content-disposition", ""):
                continue  # A download (the series as CSV) is a file, not a page.
            page.goto(path)
            page_fits(page)
        # The menu holds the links the bar has no room for.
        page.goto(f"/rate/{demo.slug}/mine/")
        page.get_by_role("button", name="Menu").click()
        page.get_by_role("link", name="Dashboards").click()
        page.wait_for_url("**/metrics/")
        page.get_by_role("button", name="Log out").click()
        page.wait_for_url("**/accounts/login/")
        page_fits(page)


def test_my_judgements_revise_column_is_on_a_phones_screen(browser, live_server, demo, screens):
    with browsing(browser, live_server, "rater_ann", viewport=PHONE) as page:
        page.goto(f"/rate/{demo.slug}/mine/")
        save = page.get_by_role("button", name="Save").first
        box = save.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        page.screenshot(path=str(screens / "rating-my-judgements-390.png"), full_page=True)


def query_top(page) -> float:
    return page.evaluate("document.querySelector('#rating .query').getBoundingClientRect().top")


ANSWERS = "#rating button.grade, #rating form.skip button"


def answers_on_screen(page) -> list[str]:
    """The labels of the grade and Skip buttons that are not wholly on the first screen."""
    return page.evaluate(
        """s => [...document.querySelectorAll(s)].filter(b => {
            const r = b.getBoundingClientRect();
            return r.top < 0 || r.bottom > window.innerHeight || r.left < 0
                || r.right > window.innerWidth;
        }).map(b => b.innerText.trim())""",
        ANSWERS,
    )


def test_a_phone_rater_has_every_answer_on_screen_however_long_the_document(
    browser, live_server, demo, screens
):
    from judgements.models import Document

    Document.objects.filter(project=demo).update(snippet="A long listing. " * 600)
    with browsing(browser, live_server, "rater_ann", viewport=PHONE) as page:
        assert page.url.endswith(RATE)  # ann rates one project: the login lands here.
        page.screenshot(path=str(screens / "rating-390-long-document.png"))
        assert page.locator(ANSWERS).count() == len(demo.scale) + 2  # "Can't tell", Skip.
        assert page.evaluate("document.documentElement.scrollHeight") > 3 * PHONE["height"]
        assert answers_on_screen(page) == []
        seen = [shown_pair(page)]
        for key in ("2", "0", "3"):
            press_and_wait(page, key)
            assert page.evaluate("window.scrollY") == 0  # No jump after an answer.
            assert answers_on_screen(page) == []
            seen.append(shown_pair(page))
        assert len(set(seen)) == 4
        # Reading to the document's end, the answers stay put and the text is not under them.
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        assert answers_on_screen(page) == []
        snippet_bottom = page.evaluate(
            "document.querySelector('#rating .hit-snippet').getBoundingClientRect().bottom"
        )
        dock_top = page.evaluate(
            "document.querySelector('#rating .grades').getBoundingClientRect().top"
        )
        assert snippet_bottom <= dock_top
        page.screenshot(path=str(screens / "rating-390-long-document-end.png"))
        page_fits(page)


def test_key_hints_show_on_a_laptop_and_not_on_a_touch_screen(browser, live_server, demo, screens):
    hints = "document.querySelectorAll('#rating kbd')"
    visible = f"[...{hints}].filter(k => k.offsetParent !== null).length"
    with browsing(
        browser, live_server, "rater_ann", viewport={"width": 1280, "height": 900}
    ) as page:
        assert page.evaluate(visible) > len(demo.scale)
        page.screenshot(path=str(screens / "rating-1280.png"))
    touch = {"viewport": PHONE, "has_touch": True, "is_mobile": True}
    with browsing(browser, live_server, "rater_ann", **touch) as page:
        assert page.evaluate(f"{hints}.length") > 0
        assert page.evaluate(visible) == 0
        page.screenshot(path=str(screens / "rating-390-touch.png"))


@pytest.fixture
def last_pair(db):
    """A project with one pair left to grade, for raters alice and bob."""
    project = ProjectFactory(name="Last pair", slug="last-pair")
    query = QueryFactory(project=project, text="tent")
    run = ResultListFactory(project=project)
    HitFactory(result_list=run, query=query, document=DocumentFactory(project=project), rank=1)
    rater_named("alice"), rater_named("bob")
    return project


def test_the_end_of_the_queue_says_another_rater_holds_the_last_pair_until_they_leave(
    browser, live_server, last_pair
):
    url = f"/rate/{last_pair.slug}/"
    with (
        browsing(browser, live_server, "bob") as bob,
        browsing(browser, live_server, "alice") as alice,
    ):
        bob.goto(url)
        pair = shown_pair(bob)
        alice.goto(url)
        held = alice.get_by_test_id("held")
        assert (
            "1 pair is being rated by another rater; it comes back in 10 min" in held.inner_text()
        )
        assert alice.get_by_test_id("left").inner_text() == "1"

        # bob leaves the page: his lease ends then, not in ten minutes.
        bob.goto(f"/rate/{last_pair.slug}/mine/")
        deadline = time.monotonic() + 10
        while QueueLease.objects.filter(rater__username="bob").exists():
            assert time.monotonic() < deadline, "leaving the page kept the lease"
            time.sleep(0.1)
        alice.get_by_role("link", name="Check again").click()
        alice.wait_for_selector("article.pair")
        assert shown_pair(alice) == pair


def test_a_skip_is_kept_on_the_server_and_analysts_count_it(browser, live_server, demo):
    with browsing(browser, live_server, "rater_ben") as page:
        skipped = shown_pair(page)
        press_and_wait(page, "s")
        assert shown_pair(page) != skipped
        press_and_wait(page, "?")
    # A new session (another browser, say) still has the skip: the pair stays at the back.
    with browsing(browser, live_server, "rater_ben") as page:
        assert shown_pair(page) != skipped
        assert QueueSkip.objects.filter(rater__username="rater_ben").count() == 1
    with browsing(browser, live_server, "analyst") as page:
        page.goto(f"/metrics/{demo.slug}/raters/")
        row = page.locator('#rater-lines tr[data-rater="rater_ben"]')
        current = Judgement.objects.for_project(demo).filter(rater__username="rater_ben")
        cant_tell = sum(event.kind == "cant_tell" for event in current.current())
        assert cant_tell >= 1
        assert row.locator('[data-testid="skips"]').inner_text() == "1"
        assert row.locator('[data-testid="cant-tell"]').inner_text() == str(cant_tell)


def test_a_skip_of_a_bad_id_is_refused_and_the_page_goes_on_working(page, demo):
    log_in(page, "rater_ann")
    page.goto(RATE)
    pair = shown_pair(page)
    # A changed page (or a hand-made post) names a query id beyond PostgreSQL's bigint.
    with page.expect_navigation():
        page.evaluate(
            """() => {
              const form = document.querySelector("#rating form.skip");
              form.removeAttribute("hx-post");
              form.querySelector("[name=query]").value = "9223372036854775808";
              HTMLFormElement.prototype.submit.call(form);
            }"""
        )
    assert page.get_by_role("alert").inner_text().startswith("Not skipped: query:")
    with page.expect_navigation():
        page.get_by_role("link", name="Back to rating").click()
    assert shown_pair(page) == pair
    assert not QueueSkip.objects.exists()
    press_and_wait(page, "s")
    assert shown_pair(page) != pair
    assert QueueSkip.objects.count() == 1


def test_undo_goes_back_step_by_step_and_shows_the_grade_each_pair_had(page, demo):
    log_in(page, "rater_ann")
    page.goto(RATE)
    answered = []
    for key in ("1", "3", "0"):
        answered.append((shown_pair(page), key))
        press_and_wait(page, key)
    for pair, key in reversed(answered[1:]):
        press_and_wait(page, "u")
        assert shown_pair(page) == pair
        marked = page.locator("#rating button.grade.was")
        assert marked.count() == 1 and marked.get_attribute("value") == key
        assert "Undone: your answer" in page.get_by_test_id("restored").inner_text()
    events = [(q, d, kind, grade) for q, d, kind, grade, _ in web_events("rater_ann")]
    (a, _), (b, _), (c, _) = answered
    assert events == [
        (*a, "grade", 1),
        (*b, "grade", 3),
        (*c, "grade", 0),
        (*c, "retract", None),
        (*b, "retract", None),
    ]
    # Answered again, the given-back pair takes its new grade, and the queue goes on.
    press_and_wait(page, "2")
    assert web_events("rater_ann")[-1][:4] == (*b, "grade", 2)
    assert shown_pair(page) != b


def test_a_project_without_queries_says_so_and_draws_no_progress_bar(page, demo):
    ProjectFactory(name="Not started", slug="not-started")
    log_in(page, "rater_ann")
    page.goto("/rate/not-started/")
    assert "No queries yet" in page.get_by_test_id("empty").inner_text()
    assert page.get_by_role("progressbar").count() == 0


def test_the_progress_bar_has_an_accessible_name(page, demo):
    log_in(page, "rater_ann")
    page.goto(RATE)
    bar = page.get_by_role("progressbar", name="Your progress in Outdoor gear")
    assert bar.count() == 1
    done = int(page.get_by_test_id("done").inner_text())
    left = int(page.get_by_test_id("left").inner_text())
    assert bar.get_attribute("value") == str(done) and bar.get_attribute("max") == str(done + left)


def test_a_rater_of_one_project_lands_in_its_queue_after_login(page, demo):
    log_in(page, "rater_ann")
    assert page.url.endswith(RATE)
    assert page.locator("article.pair").count() == 1
