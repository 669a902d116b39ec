"""What the browser tests share: logging in through the site's login page, and the chat."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from toolcalling.testutils import override_toolcalling

CHAT = "/chat/shop/"


def log_in(page: Page, url: str, username: str, password: str, button: str = "Sign in") -> None:
    """Open a page that needs a login, fill the login form it redirects to (the site's "Sign in", the
    admin's "Log in"), and land on the page."""
    page.goto(url)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name=button).click()


def sign_in(page: Page, url: str, username: str = "alice", password: str = "alice-demo-pass") -> None:
    """Log in to a chat page and wait until its chat has started."""
    log_in(page, url, username, password)
    chat_ready(page)


def chat_ready(page: Page) -> None:
    """Until chat.js (a deferred script) has wired the chat: a key pressed before that does nothing."""
    page.locator(".tc-chat").wait_for()  # the chat page, after the login's redirect
    page.wait_for_function("() => Boolean(document.querySelector('.tc-chat')?.toolcallingChat)")


def ask(page: Page, text: str) -> None:
    """Type a message into the chat and send it with Enter, as a user does."""
    box = page.get_by_label("Your message")
    box.fill(text)
    box.press("Enter")


def no_horizontal_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture
def short_keepalive() -> Iterator[None]:
    """The page's event streams end soon after the page closes, so the test's live-server requests end with it."""
    with override_toolcalling(EVENTS_KEEPALIVE=0.2):
        yield
