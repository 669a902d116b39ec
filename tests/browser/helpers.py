"""What the browser tests share: signing in through the site's login page, and the demo shop's data."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from toolcalling.testutils import override_toolcalling

CHAT = "/chat/shop/"


def sign_in(page: Page, url: str, username: str = "alice", password: str = "alice-demo-pass") -> None:
    """Open a page that needs a login, fill the login form it redirects to, and land on the page with its chat
    started (keys pressed before the deferred chat.js runs would not reach it)."""
    page.goto(url)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_function("() => Boolean(document.querySelector('.tc-chat')?.toolcallingChat)")


def no_horizontal_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture
def short_keepalive() -> Iterator[None]:
    """The page's event streams end soon after the page closes, so the test's live-server requests end with it."""
    with override_toolcalling(EVENTS_KEEPALIVE=0.2):
        yield
