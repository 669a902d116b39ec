"""The chat page's Send button becomes Stop while a turn runs, in every tab that shows the conversation."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import ask, sign_in
from tests.services import wait_until
from toolcalling.models import Conversation, ToolCall


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the pages' streams end soon after they close
def test_stop_ends_a_running_turn_from_any_tab(live_server, browser, model, alice, tmp_path):
    marker = tmp_path / "job"
    model.calls(("wait_for_release", {"marker": str(marker)}), ("add", {"a": 1, "b": 2}))

    first_tab, second_tab = browser.new_context(), browser.new_context()
    first = first_tab.new_page()
    sign_in(first, live_server.url + "/chat/slow/", "alice", "pw")
    expect(first.get_by_role("heading", name="Slow")).to_be_visible()
    ask(first, "Run the slow job")
    box = first.get_by_label("Your message")
    wait_until(Path(f"{marker}.started").exists, what="the tool to start")
    stop_first = first.get_by_role("button", name="Stop")
    expect(stop_first).to_be_enabled(timeout=15_000)
    box.press("Enter")  # Enter while a turn runs neither sends nor stops
    assert Conversation.objects.get().stop_requested_at is None

    # A second tab opens the running conversation: it offers Stop too, and stops the turn.
    second = second_tab.new_page()
    sign_in(second, live_server.url + "/chat/slow/", "alice", "pw")
    stop_second = second.get_by_role("button", name="Stop")
    expect(stop_second).to_be_enabled(timeout=15_000)
    stop_second.click()
    expect(stop_second).to_be_disabled(timeout=15_000)  # pressed once: it waits for the turn to end
    wait_until(lambda: Conversation.objects.get().stop_requested_at is not None, what="the stop request")
    Path(f"{marker}.release").touch()

    for page in (first, second):
        expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
        # Each call's badge: its status as a class, in words for the customer.
        added = page.locator(".tc-call", has_text="Add").locator(".tc-badge")
        expect(added).to_have_class(re.compile(r"\btc-status-cancelled\b"), timeout=15_000)
        expect(added).to_have_text("withdrawn")
        waited = page.locator(".tc-call", has_text="Wait for release").locator(".tc-badge")
        expect(waited).to_have_class(re.compile(r"\btc-status-succeeded\b"), timeout=15_000)
        expect(waited).to_have_text("done")
    expect(first.locator(".tc-activity")).to_have_text("Stopped.", timeout=15_000)
    assert Conversation.objects.get().status == "idle"
    assert list(ToolCall.objects.order_by("index").values_list("status", flat=True)) == ["succeeded", "cancelled"]
    model.assert_done()
    first_tab.close()
    second_tab.close()
