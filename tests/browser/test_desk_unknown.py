"""The desk's "outcome unknown" state in a real browser: a worker was killed while it ran a charge; a staff member
follows the desk's notice to the call, reads what is known of the run, marks it done with what they found, and
the conversation goes on."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from tests.browser.helpers import log_in
from toolcalling import Assistant, approval
from toolcalling.engine import Turn, conversation_for
from toolcalling.models import Conversation, ToolCall


def test_staff_settle_a_call_whose_worker_died_on_the_desk(live_server, browser, model, transactional_db, alice):
    get_user_model().objects.create_superuser("desk", "desk@example.com", "desk-pass")
    model.call("approved_charge", {"amount": 3})
    assistant = Assistant.get("till")
    conversation = conversation_for(assistant, alice, None)
    Turn(assistant, conversation, user=alice).run("Charge me 3")
    call = ToolCall.objects.get(name="approved_charge")
    # The row a killed worker leaves: running, its lease over.
    long_ago = timezone.now() - timedelta(hours=2)
    ToolCall.objects.filter(pk=call.pk).update(
        status="running", started_at=long_ago, lease_expires_at=long_ago, worker="worker-7.example:4242"
    )
    assert [c.pk for c in approval.sweep().unknown] == [call.pk]
    model.reply("Your card was charged 3.")

    context = browser.new_context()
    page = context.new_page()
    log_in(page, live_server.url + "/admin/toolcalling/toolcall/", "desk", "desk-pass", "Log in")
    notice = page.locator(".tc-unknown-notice")
    expect(notice).to_contain_text("1 call's outcome is unknown")
    notice.get_by_role("link").click()
    page.get_by_role("link", name=str(call.pk), exact=True).click()

    panel = page.locator(".tc-desk")
    expect(panel.locator("h2")).to_contain_text("Outcome unknown")
    expect(panel.locator(".tc-worker")).to_have_text("worker-7.example:4242")
    expect(panel.locator(".tc-started")).not_to_be_empty()
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    page.get_by_label("What happened").fill("Charged 3 (seen at the bank).")
    page.get_by_role("button", name="It took effect").click()
    expect(page.locator(".messagelist")).to_contain_text(
        f"#{call.pk} approved_charge is marked as done; the conversation goes on."
    )
    call.refresh_from_db()
    assert (call.status, call.result) == ("succeeded", "Charged 3 (seen at the bank).")
    assert Conversation.objects.get(pk=conversation.pk).status == "idle"
    model.assert_done()
    context.close()
