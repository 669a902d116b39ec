"""A call of unknown outcome on the chat page, in a real browser: the worker running a charge the customer had
confirmed was killed, and the customer says on their chat page what happened (it happened, run it again), as
staff do on the desk; the conversation goes on from that. A staff member's call of unknown outcome only waits
there. The death is the row a killed worker leaves: ``running``, its lease over, found by the sweep."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from tests.approval.test_idempotency import delivered_keys
from tests.browser.helpers import chat_ready, sign_in
from toolcalling import Assistant, approval
from toolcalling.engine import Turn, conversation_for
from toolcalling.models import Conversation, ToolCall

pytestmark = pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the page's streams end soon after it closes

ASKED = "Confirmed charge (amount: 3)"  # the call as the page names it: its label and arguments


def died_while_running(alice, model, tool):
    """A call of ``tool`` confirmed (or approved) whose worker was killed before it stored anything: the sweep
    found it, and it waits for a person."""
    model.call(tool, {"amount": 3})
    assistant = Assistant.get("till")
    conversation = conversation_for(assistant, alice, None)
    Turn(assistant, conversation, user=alice).run("Charge me 3")
    call = ToolCall.objects.get(name=tool)
    long_ago = timezone.now() - timedelta(hours=2)
    ToolCall.objects.filter(pk=call.pk).update(
        status="running", started_at=long_ago, lease_expires_at=long_ago, worker="worker-7.example:4242"
    )
    assert [c.pk for c in approval.sweep().unknown] == [call.pk]
    return conversation, call


def open_conversation(page: Page, url: str, conversation: Conversation) -> None:
    """Sign in to the till's chat page and open ``conversation`` by its link (it was begun by code, so the list
    does not show it by default)."""
    sign_in(page, url, "alice", "pw")
    page.goto(f"{url}#{conversation.pk}")
    page.reload()
    chat_ready(page)


def test_the_customer_says_their_interrupted_call_happened_and_the_conversation_goes_on(
    live_server, browser, model, transactional_db, alice
):
    conversation, call = died_while_running(alice, model, "confirmed_charge")
    model.reply("Good: your card was charged 3.")
    context = browser.new_context()
    page = context.new_page()
    open_conversation(page, live_server.url + "/chat/till/", conversation)

    waiting = page.locator(".tc-waiting")
    expect(waiting).to_be_visible(timeout=15_000)
    expect(waiting).to_contain_text("It is not known whether this took effect.")
    expect(waiting).to_contain_text(ASKED)
    expect(page.locator(".tc-call", has_text="Confirmed charge")).to_contain_text("interrupted")
    for choice in ("It happened", "Run it again", "It did not happen"):
        expect(waiting.get_by_role("button", name=f"{choice}: {ASKED}")).to_be_enabled()
    expect(waiting.get_by_role("button", name=re.compile("^(Confirm|Decline):"))).to_have_count(0)
    expect(page.get_by_role("button", name="Withdraw the request")).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_disabled()

    waiting.get_by_label("What you found (optional)").fill("Charged 3: it is on my statement.")
    waiting.get_by_role("button", name=f"It happened: {ASKED}").click()
    messages = page.locator(".tc-messages")
    expect(messages.locator(".tc-assistant").last).to_contain_text("your card was charged 3", timeout=15_000)
    expect(waiting).to_be_hidden()
    expect(messages.locator(".tc-call", has_text="Confirmed charge")).to_contain_text("done")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    call.refresh_from_db()
    assert (call.status, call.result, call.decided_by) == ("succeeded", "Charged 3: it is on my statement.", alice)
    assert delivered_keys("charge") == {}  # nothing was run again
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"
    model.assert_done()
    context.close()


def test_the_customer_runs_their_interrupted_call_again(live_server, browser, model, transactional_db, alice):
    conversation, call = died_while_running(alice, model, "confirmed_charge")
    model.reply("Charged 3 now.")
    context = browser.new_context()
    page = context.new_page()
    open_conversation(page, live_server.url + "/chat/till/", conversation)

    page.locator(".tc-waiting").get_by_role("button", name=f"Run it again: {ASKED}").click(timeout=15_000)
    expect(page.locator(".tc-messages .tc-assistant").last).to_contain_text("Charged 3 now.", timeout=15_000)
    expect(page.locator(".tc-call", has_text="Confirmed charge")).to_contain_text("done")
    call.refresh_from_db()
    assert (call.status, call.decided_by) == ("succeeded", alice)
    assert list(delivered_keys("charge").values()) == [1]  # run again once, with the call's own key
    model.assert_done()
    context.close()


def test_the_customer_sees_a_staff_members_call_of_unknown_outcome_wait_for_staff(
    live_server, browser, model, transactional_db, alice
):
    conversation, _ = died_while_running(alice, model, "approved_charge")
    context = browser.new_context()
    page = context.new_page()
    open_conversation(page, live_server.url + "/chat/till/", conversation)

    waiting = page.locator(".tc-waiting")
    expect(waiting).to_be_visible(timeout=15_000)
    expect(waiting).to_contain_text("Waiting for a staff member.")
    expect(waiting).to_contain_text("a staff member checks whether it took effect")
    expect(waiting).to_contain_text("Approved charge (amount: 3)")
    expect(waiting.get_by_role("button")).to_have_count(0)  # nothing for the customer to decide or withdraw
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    context.close()
