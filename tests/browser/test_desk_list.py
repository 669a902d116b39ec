"""The desk's list in a real browser, at 1280 px and on a phone: every column shows whole (no cell clips what it
holds, the table never runs past the window), the arguments and preview read as labelled lines, and a staff member
decides a call from its own row: Approve at once, Reject after the reason."""

import pytest
from playwright.sync_api import Page, expect
from rest_framework.test import APIClient

from demo_site.shop.models import Order
from tests.browser.helpers import log_in
from toolcalling.models import ToolCall

DESK = "/admin/toolcalling/toolcall/"
# What does not fit: a cell whose content is wider than the cell, a table wider than its box or the window.
OVERFLOWS = """() => {
  const bad = [];
  const table = document.querySelector('#result_list');
  for (const cell of table.querySelectorAll('th, td')) {
    if (cell.offsetParent === null) continue;  // not shown (the header row on a phone)
    if (cell.scrollWidth > cell.clientWidth + 1) bad.push(`${cell.className}: ${cell.textContent.trim().slice(0, 40)}`);
  }
  const box = table.parentElement;
  if (box.scrollWidth > box.clientWidth + 1) bad.push(`the table (${box.scrollWidth}px) is wider than its box`);
  const right = table.getBoundingClientRect().right;
  if (right > document.documentElement.clientWidth + 1) bad.push('the table runs past the window');
  if (document.documentElement.scrollWidth > window.innerWidth) bad.push('the page scrolls sideways');
  return bad;
}"""


def waiting_cancellation(model, user, order_no: str, reason: str) -> ToolCall:
    api = APIClient()
    api.force_authenticate(user)
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "shop"}, format="json").json()
    model.call("cancel_order", {"order_no": order_no, "reason": reason})
    response = api.post(f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": "Cancel it"})
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


def row(page: Page, call: ToolCall):
    return page.locator("#result_list tbody tr", has=page.locator(f"a[href$='/toolcall/{call.pk}/change/']"))


@pytest.fixture
def two_waiting(model, shop, django_user_model):
    bob = django_user_model.objects.get(username="bob")
    long_reason = "I ordered the wrong colour and would like the blue one instead, " * 3
    return (
        waiting_cancellation(model, shop, "20251120-0007", long_reason.strip()),
        waiting_cancellation(model, bob, "20251002-0041", "Found it cheaper"),
    )


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)], ids=["1280px", "phone"])
def test_every_column_of_the_desk_shows_whole(live_server, browser, two_waiting, width, height):
    alices, _ = two_waiting
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    log_in(page, live_server.url + DESK, "admin", "admin-demo-pass", button="Log in")
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    assert page.evaluate(OVERFLOWS) == []
    mine = row(page, alices)
    expect(mine.locator(".field-arguments dt")).to_have_text(["order_no", "reason"])
    expect(mine.locator(".field-arguments dd").first).to_have_text("20251120-0007")
    expect(mine.locator(".field-preview")).to_contain_text("can be cancelled")
    for name in ("Approve", "Reject"):
        button = mine.get_by_role("button", name=name)
        expect(button).to_be_visible()
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    context.close()


def test_a_staff_member_decides_each_call_from_its_row(live_server, browser, model, two_waiting):
    alices, bobs = two_waiting
    model.reply("Your order 20251120-0007 is cancelled.")
    model.reply("The cancellation was not approved.")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, live_server.url + DESK, "admin", "admin-demo-pass", button="Log in")

    row(page, alices).get_by_role("button", name="Approve").click()
    expect(page.locator(".messagelist")).to_contain_text(f"Approved #{alices.pk} cancel_order; it ran: Succeeded.")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)  # back on the desk, with the other call left
    assert Order.objects.get(order_no="20251120-0007").state == Order.State.CANCELLED
    assert ToolCall.objects.get(pk=bobs.pk).status == ToolCall.Status.AWAITING_APPROVAL

    row(page, bobs).get_by_role("button", name="Reject").click()
    page.get_by_label("Reason (the model reads it and may pass it on to the user):").fill("Packed already")
    page.get_by_role("button", name="Reject").click()
    expect(page.locator(".messagelist")).to_contain_text("Rejected 1 tool call; the model is told why.")
    expect(page.locator("#result_list")).to_have_count(0)  # nothing waits any more
    rejected = ToolCall.objects.get(pk=bobs.pk)
    assert (rejected.status, rejected.decision_reason) == (ToolCall.Status.REJECTED, "Packed already")
    assert Order.objects.get(order_no="20251002-0041").state != Order.State.CANCELLED
    model.assert_done()
    context.close()
