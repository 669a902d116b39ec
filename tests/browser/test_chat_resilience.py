"""The chat page when things go wrong: a lost connection, an over-long message, server errors, failing tools."""

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import (
    CHAT,
    short_keepalive,  # noqa: F401  (a fixture, used by name below)
    sign_in,
)
from toolcalling.models import ToolCall
from toolcalling.testutils import override_toolcalling

API = "**/api/toolcalling/**"


pytestmark = pytest.mark.usefixtures("short_keepalive")


@pytest.fixture
def page(live_server, browser, shop) -> Page:
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, live_server.url + CHAT)
    expect(page.get_by_role("heading", name="Shop helper")).to_be_visible()
    yield page
    context.close()


def posts(page: Page) -> list[str]:
    """Record every message POST the page makes from now on."""
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if r.method == "POST" and r.url.endswith("/messages/") else None)
    return seen


def test_a_lost_connection_keeps_the_text_says_so_and_clears_when_the_server_is_back(page, model):
    model.reply("Order 20250719-0032 has shipped.")
    box = page.get_by_label("Your message")
    notice = page.get_by_role("alert")

    page.route(API, lambda route: route.abort("connectionrefused"))  # the server is gone
    box.fill("Where is my order 20250719-0032?")
    box.press("Enter")
    expect(notice).to_contain_text("The connection to the server was lost, so your message was not sent")
    expect(box).to_have_value("Where is my order 20250719-0032?")
    expect(page.locator(".tc-messages .tc-user")).to_have_count(0)  # nothing looks sent that was not
    assert "Failed to fetch" not in notice.inner_text()

    page.unroute(API)  # the server is back: the page notices by itself
    expect(notice).to_have_text("", timeout=20_000)
    box.press("Enter")
    expect(page.locator(".tc-messages .tc-assistant").last).to_contain_text("has shipped", timeout=15_000)
    expect(box).to_have_value("")
    model.assert_done()


@override_toolcalling(MAX_MESSAGE_LENGTH=40)
def test_the_length_limit_is_known_before_sending_and_an_over_long_message_is_never_lost(page):
    page.reload()  # rendered again under the limit of this test
    page.wait_for_function("() => Boolean(document.querySelector('.tc-chat')?.toolcallingChat)")
    box = page.get_by_label("Your message")
    notice = page.get_by_role("alert")
    sent = posts(page)
    expect(page.locator(".tc-hint")).to_contain_text("At most 40 characters.")
    long_text = "Please tell me everything about my orders."  # 42 characters
    box.fill(long_text)
    counter = page.locator(".tc-counter")
    expect(counter).to_have_text("42 of 40 characters")
    expect(box).to_have_attribute("aria-invalid", "true")

    box.press("Enter")
    expect(notice).to_have_text(
        "Your message has 42 characters, more than the 40 allowed. Shorten it, then send it again."
    )
    expect(box).to_have_value(long_text)
    assert sent == [] and page.locator(".tc-messages .tc-user").count() == 0

    # A page that knew an older, larger limit: the server refuses, in a sentence, and the text stays.
    page.evaluate("document.querySelector('.tc-chat').toolcallingChat.maxLength = 1000")
    box.press("Enter")
    expect(notice).to_have_text("The message is too long: it may have at most 40 characters.")
    expect(box).to_have_value(long_text)
    expect(page.locator(".tc-messages .tc-user")).to_have_count(0)
    assert len(sent) == 1


def test_server_errors_appear_as_sentences_never_raw_json(page):
    box = page.get_by_label("Your message")
    notice = page.get_by_role("alert")
    # A proxy's error page (HTML, not JSON) and an error body the page has no words for.
    page.route("**/messages/", lambda route: route.fulfill(status=500, body="<h1>Server Error (500)</h1>"))
    box.fill("Hello")
    box.press("Enter")
    expect(notice).to_have_text("Something went wrong on the server (error 500). Please try again in a moment.")
    page.unroute("**/messages/")
    page.route("**/messages/", lambda route: route.fulfill(status=418, json={"teapot": {"nested": True}}))
    box.press("Enter")
    expect(notice).to_have_text("The server could not accept this (error 418).")
    expect(box).to_have_value("Hello")
    assert "{" not in notice.inner_text()


def test_a_failing_model_is_a_neutral_sentence(page, model):
    model.error(status=500)
    box = page.get_by_label("Your message")
    box.fill("Where is my order 20250719-0032?")
    box.press("Enter")
    notice = page.get_by_role("alert")
    expect(notice).to_have_text("The assistant could not finish this answer. You can send your message again.")
    # The user's message was stored before the model failed, so it stays on the page and leaves the box.
    expect(page.locator(".tc-messages .tc-user")).to_have_count(1)
    page.reload()
    page.wait_for_function("() => Boolean(document.querySelector('.tc-chat')?.toolcallingChat)")
    expect(notice).to_have_text("The assistant could not finish this answer. You can send your message again.")


def test_a_tools_exception_reaches_the_customer_as_a_neutral_sentence(page, model):
    # Bob's order: the tool raises ValueError("No order 20251002-0041 for this customer.").
    model.call("get_order_status", {"order_no": "20251002-0041"})
    model.reply("I could not find that order.")
    box = page.get_by_label("Your message")
    box.fill("Where is order 20251002-0041?")
    box.press("Enter")
    call = page.locator(".tc-call", has_text="Look up an order")
    expect(call).to_contain_text("did not work", timeout=15_000)
    shown = page.locator(".tc-chat").inner_text()
    assert "ValueError" not in shown and "No order" not in shown and "get_order_status" not in shown
    # The details stay for staff (the admin shows the call's error) and for the model (the tool result).
    stored = ToolCall.objects.get(name="get_order_status")
    assert stored.error == "ValueError: No order 20251002-0041 for this customer."
    assert model.messages(1)[-1]["content"] == f"Error: {stored.error}"


@pytest.mark.toolcalling(TOOL_ERRORS="raise")
def test_a_tool_error_that_ends_the_turn_is_a_neutral_sentence(page, model):
    model.call("get_order_status", {"order_no": "20251002-0041"})
    box = page.get_by_label("Your message")
    box.fill("Where is order 20251002-0041?")
    box.press("Enter")
    notice = page.get_by_role("alert")
    expect(notice).to_have_text("The assistant could not finish this answer. You can send your message again.")
    assert "ValueError" not in page.locator(".tc-chat").inner_text()
