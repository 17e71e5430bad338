"""One look on every page (issue 42, point 5): no button keeps the browser's grey default,
buttons of a kind look alike on every page, and every field has the app's input style.

Screenshots of every page at 1280 and 390 px go to $SCREENSHOTS (look-<page>-<width>.png).
"""

import os
import re
from collections import defaultdict
from io import StringIO

import pytest
from django.core.management import call_command

from judgements.models import Project
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = os.environ.get("SCREENSHOTS", "/tmp/relevance-judge-screenshots")
WIDTHS = (1280, 390)

# Each shown button's and field's look, with what identifies it in a failure.
LOOKS = """() => {
  const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden";
  const look = (e, props) => {
    const style = getComputedStyle(e);
    return Object.fromEntries(props.map(p => [p, style.getPropertyValue(p)]));
  };
  const name = e => (e.innerText || e.name || e.id || e.outerHTML).trim().slice(0, 40);
  const body = getComputedStyle(document.body).getPropertyValue("font-family");
  const buttons = [...document.querySelectorAll("button")].filter(shown).map(e => ({
    name: name(e), kind: e.className.trim() || "(none)", body, disabled: e.disabled,
    ...look(e, ["background-color", "border-top-style", "border-radius", "font-family",
                "font-size", "cursor"]),
  }));
  const fields = [...document.querySelectorAll(
    "input:not([type]), input[type=text], input[type=url], input[type=number], " +
    "input[type=password], input[type=email], input[type=search], select, textarea"
  )].filter(shown).map(e => ({
    name: name(e), body: e.tagName === "TEXTAREA" ? null : body,
    ...look(e, ["border-top-style", "border-radius", "font-family", "border-top-color"]),
  }));
  return {buttons, fields};
}"""

BROWSER_GREY = "rgb(239, 239, 239)"


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


def test_every_button_and_field_on_every_page_has_the_apps_look(page, demo):
    from tests.config.test_production import page_paths

    log_in(page, "analyst", "relevance")
    odd, kinds = [], defaultdict(set)
    for path in [*page_paths(demo), "/api/token/"]:
        response = page.request.get(path)
        if response.status == 405 or "attachment" in response.headers.get(
            "content-disposition", ""
        ):
            continue  # A POST-only action or a download has no page.
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(path)
            name = re.sub(r"[^a-z0-9]+", "-", path.strip("/").lower()) or "home"
            page.screenshot(path=f"{SCREENSHOTS}/look-{name}-{width}.png", full_page=True)
            looks = page.evaluate(LOOKS)
            for button in looks["buttons"]:
                where = f"{path} button {button['name']!r}"
                pointer = button["disabled"] or button["cursor"] == "pointer"
                if button["background-color"] == BROWSER_GREY or not pointer:
                    odd.append(f"{where}: the browser's default button")
                if button["font-family"] != button["body"]:
                    odd.append(f"{where}: font {button['font-family']}")
                key = (
                    button["background-color"],
                    button["border-radius"],
                    button["border-top-style"],
                )
                if not button["disabled"]:
                    kinds[button["kind"]].add(key)
            for field in looks["fields"]:
                where = f"{path} field {field['name']!r}"
                # A textarea is monospace (guidelines, templates): its font is not checked.
                font = field["body"] is None or field["font-family"] == field["body"]
                if field["border-radius"] == "0px" or not font:
                    odd.append(f"{where}: the browser's default field")
                if field["border-top-style"] == "inset":
                    odd.append(f"{where}: the browser's inset border")
    assert sorted(set(odd)) == []
    # A kind of button (primary, secondary, none: the page's action) looks the same everywhere.
    assert {kind: looks for kind, looks in kinds.items() if len(looks) > 1} == {}
    assert kinds["(none)"] == kinds["primary"]
