"""Playwright with Debian's Chromium, one browser for the whole run: the ``browser`` fixture, registered by
``tests/conftest.py`` so that every test directory shares it (a second ``sync_playwright()`` in the same
thread finds the first one's event loop running and refuses to start).

Playwright's sync API runs an event loop in the test's thread, so Django's ORM calls there need
``DJANGO_ALLOW_ASYNC_UNSAFE``; the test itself never awaits anything.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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
