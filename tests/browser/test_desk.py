"""The approval desk in a real browser: a staff member follows the e-mailed link, reads the preview and
approves while the customer's chat page shows the outcome; a customer confirms their own call."""

import re

import pytest
from playwright.sync_api import expect

from demo_site.shop.models import Order
from tests.approvalapp.models import Counter
from tests.browser.helpers import ask, log_in, sign_in
from toolcalling.models import ToolCall
from toolcalling.testutils import override_toolcalling


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the page's streams end soon after it closes
def test_staff_follow_the_emailed_link_read_the_preview_approve_and_the_customer_sees_it(
    live_server, browser, model, shop, mailoutbox
):
    model.call("cancel_order", {"order_no": "20251120-0007", "reason": "Changed my mind"})
    model.reply("Order 20251120-0007 is cancelled now, as a staff member confirmed.")
    with override_toolcalling(SITE_URL=live_server.url):
        customer = browser.new_context()
        page = customer.new_page()
        sign_in(page, live_server.url + "/chat/shop/")
        ask(page, "Please cancel my order 20251120-0007")
        waiting = page.locator(".tc-waiting")
        expect(waiting).to_be_visible(timeout=15_000)
        expect(waiting).to_contain_text("Waiting for staff approval")

        # The e-mail's link is absolute: it opens from a mail client, here a fresh browser.
        [mail] = [m for m in mailoutbox if m.subject == "Approval needed: cancel_order"]
        link = re.search(r"https?://\S+", mail.body).group(0)
        call = ToolCall.objects.get(name="cancel_order")
        assert link == f"{live_server.url}/admin/toolcalling/toolcall/{call.pk}/change/"
        assert "state: Placed" in mail.body  # the preview, in the e-mail too

        staff = browser.new_context()
        desk = staff.new_page()
        log_in(desk, link, "admin", "admin-demo-pass", "Log in")
        expect(desk).to_have_url(link)
        panel = desk.locator(".tc-desk")
        expect(panel).to_contain_text("Waiting for a staff decision")
        expect(panel).to_contain_text("Please cancel my order 20251120-0007")  # what the customer said
        preview = desk.locator(".tc-preview")
        expect(preview.get_by_role("row", name="state")).to_contain_text("Placed")
        expect(preview.get_by_role("row", name="can be cancelled")).to_contain_text("yes")
        desk.get_by_role("button", name="Approve").click()
        expect(desk.locator(".messagelist")).to_contain_text(f"Approved #{call.pk} cancel_order; it ran: Succeeded.")
        expect(desk.locator("h1")).to_contain_text("Tool calls awaiting a staff decision")

        # The customer's open page shows the outcome, without a reload.
        messages = page.locator(".tc-messages")
        expect(messages.locator(".tc-assistant").last).to_contain_text("is cancelled now", timeout=15_000)
        expect(waiting).to_be_hidden()
        expect(messages.locator(".tc-call", has_text="Cancel an order")).to_contain_text("done")
    assert Order.objects.get(order_no="20251120-0007").state == Order.State.CANCELLED
    model.assert_done()
    customer.close()
    staff.close()


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the page's streams end soon after it closes
def test_a_customer_confirms_their_own_call_on_the_chat_page(live_server, browser, model, transactional_db, alice):
    Counter.objects.create(name="savings", value=4)
    model.call("move_points", {"name": "savings", "points": 3})
    model.reply("Moved 3 points to savings.")
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, live_server.url + "/chat/ops/", "alice", "pw")
    ask(page, "Move 3 points to savings")

    waiting = page.locator(".tc-waiting")
    expect(waiting).to_be_visible(timeout=15_000)
    expect(waiting).to_contain_text("Your confirmation is needed")
    expect(waiting).to_contain_text("Move points (name: savings, points: 3)")
    expect(waiting.locator(".tc-preview")).to_have_text("savings has 4 points now; it gets 3 more.")
    expect(page.get_by_role("button", name="Withdraw the request")).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    assert Counter.objects.get(name="savings").value == 4

    waiting.get_by_role("button", name="Confirm").click()
    messages = page.locator(".tc-messages")
    expect(messages.locator(".tc-assistant").last).to_contain_text("Moved 3 points to savings.", timeout=15_000)
    expect(waiting).to_be_hidden()
    expect(messages.locator(".tc-call", has_text="Move points")).to_contain_text("done")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    assert Counter.objects.get(name="savings").value == 7
    assert ToolCall.objects.get(name="move_points").decided_by.get_username() == "alice"
    model.assert_done()
    context.close()


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the page's streams end soon after it closes
def test_a_customer_declines_their_own_call_on_the_chat_page(live_server, browser, model, transactional_db, alice):
    model.call("move_points", {"name": "savings", "points": 3})
    model.reply("All right, I moved nothing.")
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, live_server.url + "/chat/ops/", "alice", "pw")
    ask(page, "Move 3 points to savings")
    waiting = page.locator(".tc-waiting")
    waiting.get_by_role("button", name="Decline").click(timeout=15_000)
    expect(page.locator(".tc-messages .tc-assistant").last).to_contain_text("I moved nothing", timeout=15_000)
    expect(page.locator(".tc-call", has_text="Move points")).to_contain_text("declined")
    assert not Counter.objects.filter(name="savings").exists()
    assert model.messages(-1)[-1]["content"] == "Not run: the user declined this call."
    model.assert_done()
    context.close()
