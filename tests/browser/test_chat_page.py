"""The chat page in a real browser: streamed answers, the wait for approval, and a staff decision arriving live."""

import re

import pytest
from playwright.sync_api import expect

from demo_site.shop.models import Order
from tests.browser.helpers import ask, log_in, sign_in
from toolcalling.models import ToolCall

# Whether a streaming bubble was ever added, judged from the mutation records: on a busy machine the
# whole answer may arrive in one read, and the bubble then comes and goes before the observer runs.
STREAM_WATCH = """() => {
  window.sawStreaming = false;
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType === Node.ELEMENT_NODE && node.matches(".tc-streaming")) window.sawStreaming = true;
      }
    }
  }).observe(document.body, { subtree: true, childList: true });
}"""


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the page's streams end soon after it closes
def test_customer_sees_streamed_answers_and_a_staff_decision_without_reloading(live_server, browser, model, shop):
    model.call("get_order_status", {"order_no": "20250719-0032"})
    model.reply("Order 20250719-0032 has shipped; it should arrive on 23 July 2025.")
    model.call("cancel_order", {"order_no": "20251120-0007", "reason": "Changed my mind"})
    model.reply("Order 20251120-0007 is cancelled now, as a staff member confirmed.")

    customer = browser.new_context()
    page = customer.new_page()
    sign_in(page, live_server.url + "/chat/shop/")
    expect(page.get_by_role("heading", name="Shop helper")).to_be_visible()
    page.evaluate(STREAM_WATCH)

    # Ask about an order: the answer streams in and the tool used is shown with its outcome.
    ask(page, "Where is my order 20250719-0032?")
    messages = page.locator(".tc-messages")
    expect(messages.locator(".tc-assistant").last).to_contain_text("should arrive on 23 July 2025", timeout=15_000)
    # Tools appear by their labels, with how they went in words; function names never reach the customer.
    expect(messages.locator(".tc-call", has_text="Look up an order")).to_contain_text("done")
    assert page.evaluate("window.sawStreaming") is True
    expect(page.get_by_label("Your message")).to_be_focused()

    # Ask to cancel: the page says it waits for staff approval and names the waiting call.
    ask(page, "Please cancel my order 20251120-0007")
    waiting = page.locator(".tc-waiting")
    expect(waiting).to_be_visible(timeout=15_000)
    expect(waiting).to_contain_text("Waiting for staff approval")
    expect(waiting).to_contain_text("Cancel an order (order no: 20251120-0007, reason: Changed my mind)")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    assert Order.objects.get(order_no="20251120-0007").state != Order.State.CANCELLED

    # A staff member approves it in the admin, in a browser of their own.
    staff = browser.new_context()
    admin = staff.new_page()
    waiting_calls = "/admin/toolcalling/toolcall/?status__exact=awaiting_approval"
    log_in(admin, live_server.url + waiting_calls, "admin", "admin-demo-pass", button="Log in")
    call = ToolCall.objects.get(name="cancel_order")
    admin.locator(f"input[name=_selected_action][value='{call.pk}']").check()
    admin.locator("select[name=action]").select_option("approve_selected")
    admin.get_by_role("button", name=re.compile(r"^(Go|Run)$")).click()  # the admin's actions button: Run from 6.1
    expect(admin.locator(".messagelist")).to_be_visible()

    # The customer's page shows the outcome and the answer, without a reload.
    expect(messages.locator(".tc-assistant").last).to_contain_text("is cancelled now", timeout=15_000)
    expect(waiting).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(messages.locator(".tc-call", has_text="Cancel an order")).to_contain_text("done")
    shown = page.locator(".tc-chat").inner_text()
    assert "get_order_status" not in shown and "cancel_order" not in shown
    assert Order.objects.get(order_no="20251120-0007").state == Order.State.CANCELLED
    model.assert_done()
    customer.close()
    staff.close()


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)  # the page's streams end soon after it closes
def test_the_chat_escapes_text_and_fits_a_phone(live_server, browser, model, shop):
    model.reply('<img src=x onerror="window.injected=1"> <b>not bold</b>')
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    page = context.new_page()
    sign_in(page, live_server.url + "/chat/shop/")

    # Keyboard only: an example question, then Enter.
    page.get_by_role("button", name="Where is my order 20250719-0032?").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Your message")).to_be_focused()
    expect(page.get_by_label("Your message")).to_have_value("Where is my order 20250719-0032?")
    page.keyboard.press("Enter")

    answer = page.locator(".tc-messages .tc-assistant").last
    expect(answer).to_contain_text('<img src=x onerror="window.injected=1"> <b>not bold</b>', timeout=15_000)
    assert answer.locator("img, b").count() == 0
    assert page.evaluate("window.injected") is None
    assert page.locator(".tc-messages").get_attribute("aria-live") == "polite"
    # One column, nothing wider than the screen.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    chat = page.locator(".tc-chat")
    assert (
        page.evaluate("getComputedStyle(document.querySelector('.tc-chat')).gridTemplateColumns.split(' ').length") == 1
    )
    expect(chat.get_by_role("navigation", name="Your conversations")).to_be_visible()
    context.close()
