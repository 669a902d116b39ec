"""The desk's "outcome unknown" state: the list says how many calls wait for someone to say what happened, the
call's page shows what is known of the run that stopped (since when, which worker), and staff mark it done
(with a result), fail it or run it again; the conversation goes on from that."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import timezone

from tests.approval.test_decisions import post, tool_message
from tests.approval.test_desk import CHANGELIST, change_url, logged_in, messages_of
from tests.approval.test_idempotency import delivered_keys
from toolcalling import approval
from toolcalling.models import Conversation, ToolCall


@pytest.fixture
def unknown(api, model):
    """A call of alice's approved ``approved_charge``, whose worker was killed while it ran, found by the sweep."""
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "till"}, format="json").json()
    model.call("approved_charge", {"amount": 3})
    response = post(api, conversation, "charge 3")
    call = ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])
    long_ago = timezone.now() - timedelta(hours=2)
    ToolCall.objects.filter(pk=call.pk).update(
        status="running", started_at=long_ago, lease_expires_at=long_ago, worker="worker-7.example:4242"
    )
    assert [c.pk for c in approval.sweep().unknown] == [call.pk]
    call.refresh_from_db()
    return call


def test_the_desk_says_how_many_outcomes_are_unknown_and_the_page_what_is_known(approver, unknown):
    client = logged_in(approver)
    desk = client.get(CHANGELIST).content.decode()
    assert "1 call&#x27;s outcome is unknown" in desk
    assert "?status=outcome_unknown" in desk
    listed = client.get(f"{CHANGELIST}?status=outcome_unknown").content.decode()
    assert change_url(unknown) in listed
    page = client.get(change_url(unknown)).content.decode()
    assert "Outcome unknown: the process running this call stopped before its result was stored" in page
    assert "worker-7.example:4242" in page
    for button in ("_settle_succeeded", "_settle_failed", "_settle_retry"):
        assert f'name="{button}"' in page
    assert 'name="_approve"' not in page


def test_staff_mark_it_done_with_a_result_and_the_conversation_goes_on(approver, unknown, model, transactional_db):
    model.reply("Your card was charged 3.")
    client = logged_in(approver)
    response = client.post(
        change_url(unknown), {"_settle_succeeded": "It took effect", "settle_result": "Charged 3 (seen at the bank)."}
    )
    assert response.status_code == 302
    assert messages_of(client.get(response["Location"])) == [
        f"#{unknown.pk} approved_charge is marked as done; the conversation goes on."
    ]
    unknown.refresh_from_db()
    assert (unknown.status, unknown.decided_by) == ("succeeded", approver)
    assert tool_message(unknown).content == "Charged 3 (seen at the bank)."
    assert Conversation.objects.get(pk=unknown.conversation_id).status == "idle"
    assert LogEntry.objects.filter(object_id=str(unknown.pk), change_message="Outcome unknown: marked as done.")
    assert delivered_keys("charge") == {}
    # A second decision finds it settled.
    again = client.post(change_url(unknown), {"_settle_failed": "It did not take effect"})
    assert "already decided" in messages_of(client.get(again["Location"]))[0]
    model.assert_done()


def test_staff_run_it_again_from_the_page(approver, unknown, model, transactional_db):
    model.reply("Charged now.")
    client = logged_in(approver)
    response = client.post(change_url(unknown), {"_settle_retry": "Run it again"})
    assert messages_of(client.get(response["Location"])) == [f"#{unknown.pk} approved_charge runs again."]
    unknown.refresh_from_db()
    assert unknown.status == "succeeded"
    assert list(delivered_keys("charge").values()) == [1]
    model.assert_done()
