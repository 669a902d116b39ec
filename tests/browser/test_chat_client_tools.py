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


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)
def test_a_result_the_schema_refuses_or_a_function_that_throws_is_told_to_the_model(live_server, browser, model, shop):
    model.call("pick_color", {"prompt": "Your favourite?"})
    model.reply("The picker gave no colour.")
    model.call("pick_color", {"prompt": "Again?"})
    model.reply("The picker broke.")
    page = browser.new_context().new_page()
    sign_in(page, live_server.url + "/chat/browser/")
    page.evaluate("() => { window.picker.pick = async () => ({ colour: 'teal' }); }")

    ask(page, "Pick a colour for me")
    messages = page.locator(".tc-messages")
    expect(messages.locator(".tc-assistant").last).to_contain_text("The picker gave no colour.", timeout=15_000)
    first = ToolCall.objects.get(arguments={"prompt": "Your favourite?"})
    assert (first.status, first.result) == (
        "failed",
        "Error: the page's result was refused: (result): 'color' is a required property",
    )

    page.evaluate("() => { window.picker.pick = async () => { throw new Error('no colour wheel here'); }; }")
    # The first turn's answer shows before its end is stored: the page sends again once the turn is over.
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=15_000)
    ask(page, "Try again")
    expect(messages.locator(".tc-assistant").last).to_contain_text("The picker broke.", timeout=15_000)
    second = ToolCall.objects.get(arguments={"prompt": "Again?"})
    assert (second.status, second.result) == ("failed", "Error: no colour wheel here")
    model.assert_done()
