"""The chat page lists the conversations begun on it and opens the newest of those, not a newer one an MCP client
or Python code began; a checkbox shows the others too."""

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import (
    CHAT,
    short_keepalive,  # noqa: F401  (a fixture, used by name below)
    sign_in,
)
from toolcalling.models import Conversation


@pytest.mark.usefixtures("short_keepalive")
def test_the_chat_page_lists_and_opens_chat_conversations_only(live_server, browser, shop):
    chat = Conversation.objects.create(user=shop, assistant_id="shop", title="Where is my parcel?")
    chat.messages.create(role="user", content="Where is my parcel?")
    # Begun after the chat one, so the newest of all: the page must not open it.
    mcp = Conversation.objects.create(user=shop, assistant_id="shop", title="MCP: get_order_status", origin="mcp")
    code = Conversation.objects.create(user=shop, assistant_id="shop", title="Nightly report", origin="code")
    assert list(Conversation.objects.filter(user=shop))[0] == code

    context = browser.new_context()
    page = context.new_page()
    sign_in(page, live_server.url + CHAT)
    listed = page.locator(".tc-list .tc-conversation")
    expect(listed).to_have_count(1)
    expect(listed.first).to_have_text("Where is my parcel?")
    expect(listed.first).to_have_attribute("aria-current", "true")
    expect(page.locator(".tc-messages")).to_contain_text("Where is my parcel?")

    page.get_by_label("Also those begun by code or an MCP client").check()
    expect(listed).to_have_count(3)
    expect(page.locator(".tc-list")).to_contain_text(mcp.title)
    expect(page.locator(".tc-list")).to_contain_text(code.title)
    # The open conversation stays open while the list grows.
    expect(page.locator(".tc-conversation[aria-current=true]")).to_have_text("Where is my parcel?")
    context.close()
