"""Playwright driving the system's headless Chromium against pytest-django's live server."""

import os
from pathlib import Path

import pytest
from django.db import connections

# Playwright's sync API runs an event loop in the test thread, which trips Django's
# check against calling the ORM from async code; the ORM calls here are synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `apt-get install chromium` to run browser tests.")
    from playwright.sync_api import sync_playwright

    serialized = _serialized_test_data()
    with sync_playwright() as playwright:
        _give_serialized_test_data(serialized)
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()
        connections.close_all()


# While Playwright runs, the test thread has a running event loop, so Django (through
# asgiref's Local) hands it new connection objects. Those lack the copy of the test
# data that serialized_rollback restores (the role groups among it): hand it over.
def _serialized_test_data() -> dict[str, str]:
    return {
        alias: connections[alias]._test_serialized_contents
        for alias in connections
        if hasattr(connections[alias], "_test_serialized_contents")
    }


def _give_serialized_test_data(serialized: dict[str, str]) -> None:
    for alias, contents in serialized.items():
        connections[alias]._test_serialized_contents = contents


def new_context(browser, live_server, **options):
    """A browser context of its own (its own cookies) that reaches only the live server."""
    context = browser.new_context(
        base_url=live_server.url, **{"viewport": {"width": 1200, "height": 1000}, **options}
    )
    # Only the live server is reachable: the demo's product images point at a shop
    # that does not exist, and a hermetic test must not wait for the network.
    context.route(
        "**/*",
        lambda route: (
            route.continue_() if route.request.url.startswith(live_server.url) else route.abort()
        ),
    )
    return context


def _new_page(browser, live_server, **options):
    context = new_context(browser, live_server, **options)
    return context, context.new_page()


@pytest.fixture
def page(browser, live_server):
    context, page = _new_page(browser, live_server)
    yield page
    context.close()


@pytest.fixture
def page_without_javascript(browser, live_server):
    context, page = _new_page(browser, live_server, java_script_enabled=False)
    yield page
    context.close()


def log_in(page, username: str, password: str = "password") -> None:
    """Sign in on the login page and wait to leave it (a rater of one project lands in
    its queue, everyone else on the projects page)."""
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
