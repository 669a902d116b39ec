"""Playwright with Debian's Chromium against the live test server.

Playwright's sync API runs an event loop in the test's thread, so Django's ORM calls there need
``DJANGO_ALLOW_ASYNC_UNSAFE``; the test itself never awaits anything.
"""

import os
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.services import unavailable

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser() -> Iterator:
    if not CHROMIUM.exists():
        unavailable("Chromium is not installed at /usr/bin/chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(autouse=True)
def pages_close_with_their_test(request) -> Iterator[None]:
    """Close every page a test opened, even when it failed before closing them, so their streams end with
    the test instead of reconnecting into the next one (``requests_end_with_their_test`` waits for that)."""
    yield
    if "browser" in request.fixturenames:
        for context in request.getfixturevalue("browser").contexts:
            context.close()


@pytest.fixture
def shop(transactional_db: None) -> Any:
    """The demo shop's data (customers, orders, staff), committed where the live server sees it; its customer."""
    call_command("demo_setup", verbosity=0, stdout=StringIO())
    return get_user_model().objects.get(username="alice")
