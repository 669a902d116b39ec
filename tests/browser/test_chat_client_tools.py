"""The chat page runs a client tool with the JavaScript function its template tag registered, and the turn goes on."""

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import ask, sign_in
from toolcalling.models import ToolCall


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the page's streams end soon after it closes
def test_the_page_runs_a_client_tool_with_its_registered_function(live_server, browser, model, shop):
    model.call("pick_color", {"prompt": "Your favourite?"})
    model.reply("Teal it is.")
    page = browser.new_context().new_page()
    sign_in(page, live_server.url + "/chat/browser/")

    ask(page, "Pick a colour for me")

    messages = page.locator(".tc-messages")
    expect(messages.locator(".tc-assistant").last).to_contain_text("Teal it is.", timeout=15_000)
    assert page.evaluate("window.picker.asked") == ["Your favourite?"]
    call = ToolCall.objects.get(name="pick_color")
    assert (call.status, call.result, call.approver) == ("succeeded", '{"color":"teal"}', "client")
    expect(page.locator(".tc-waiting")).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    model.assert_done()
