"""What a cancel and an expiry store about the decision (who, when, why, and the words the model reads), and that
a call decided by someone else in the middle of a cancel or an expiry is skipped while the others still are."""

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.db import transaction
from django.test import override_settings
from django.utils import timezone, translation

from tests.approval.test_decisions import counter, post, tool_message
from tests.integrity.test_routers import WRITES, AppWritesElsewhere
from toolcalling import approval, signals
from toolcalling.exceptions import AlreadyDecided
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.testutils import override_toolcalling


def waiting_calls(api, ops, model, *names):
    """alice asked for one gated ``bump`` per name in one answer; they all wait."""
    model.calls(*(("bump", {"name": name}) for name in names))
    response = post(api, ops, "bump them")
    assert response.status_code == 201, response.content
    return [ToolCall.objects.get(pk=c["id"]) for c in response.json()["awaiting_approval"]]


@contextmanager
def on(signal, receiver):
    signal.connect(receiver)
    try:
        yield
    finally:
        signal.disconnect(receiver)


def writes_elsewhere():
    """A router that sends the app's writes, the decisions' admin log entries too, to another connection."""
    return override_settings(DATABASE_ROUTERS=[AppWritesElsewhere(also=("admin",))])


def test_a_cancel_stores_who_cancelled_when_and_why_and_says_a_staff_member_had_not_decided(api, ops, model, alice):
    [call] = waiting_calls(api, ops, model, "a")
    before = timezone.now()
    assert api.post(f"/api/toolcalling/conversations/{ops['id']}/cancel/").status_code == 200
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decision_reason) == ("cancelled", alice, "Cancelled by the user.")
    assert before <= call.decided_at <= timezone.now()
    expected = "Not run: the user cancelled this call before a staff member decided."
    assert (tool_message(call).content, call.result) == (expected, expected)


def test_an_expiry_stores_when_and_why_and_nobody_as_the_one_who_decided(api, ops, model):
    [call] = waiting_calls(api, ops, model, "a")
    model.reply("Nobody decided.")
    before = timezone.now()
    with override_toolcalling(APPROVAL_TIMEOUT=3600):
        assert approval.expire(now=call.created_at + timedelta(hours=2)) == [call]
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decision_reason) == ("expired", None, "Expired.")
    assert before <= call.decided_at <= timezone.now()


def test_a_call_decided_during_a_cancel_is_skipped_and_the_later_ones_are_still_cancelled(
    api, ops, model, approver, django_capture_on_commit_callbacks
):
    first, second, third = waiting_calls(api, ops, model, "a", "b", "c")

    def reject_the_second(sender, tool_call, **kwargs):
        if tool_call.pk == first.pk:  # a staff member rejects the second while the first is being cancelled
            approval.reject(ToolCall.objects.get(pk=second.pk), approver, "no")

    with on(signals.tool_call_cancelled, reject_the_second), django_capture_on_commit_callbacks(execute=False):
        response = api.post(f"/api/toolcalling/conversations/{ops['id']}/cancel/")
    assert response.status_code == 200, response.content
    statuses = [ToolCall.objects.get(pk=c.pk).status for c in (first, second, third)]
    assert statuses == ["cancelled", "rejected", "cancelled"]


def test_a_call_decided_during_an_expiry_is_skipped_and_the_later_ones_still_expire(
    api, ops, model, approver, django_capture_on_commit_callbacks
):
    first, second, third = waiting_calls(api, ops, model, "a", "b", "c")

    def reject_the_second(sender, tool_call, **kwargs):
        if tool_call.pk == first.pk:
            approval.reject(ToolCall.objects.get(pk=second.pk), approver, "no")

    with on(signals.tool_call_expired, reject_the_second), django_capture_on_commit_callbacks(execute=False):
        expired = approval.expire(now=timezone.now() + timedelta(days=2))
    assert [c.pk for c in expired] == [first.pk, third.pk]
    statuses = [ToolCall.objects.get(pk=c.pk).status for c in (first, second, third)]
    assert statuses == ["expired", "rejected", "expired"]


def test_deciding_a_call_that_was_deleted_meanwhile_says_so(api, ops, model, approver):
    [call] = waiting_calls(api, ops, model, "a")
    ToolCall.objects.filter(pk=call.pk).delete()
    with pytest.raises(AlreadyDecided) as info:
        approval.approve(call, approver)
    assert info.value.status == "deleted"
    assert str(info.value.detail) == "This tool call was already decided: it is deleted."


def test_a_deleted_call_is_named_in_the_users_language(api, ops, model, approver):
    [call] = waiting_calls(api, ops, model, "a")
    ToolCall.objects.filter(pk=call.pk).delete()
    with translation.override("de"), pytest.raises(AlreadyDecided) as info:
        approval.approve(call, approver)
    assert str(info.value.detail) == "Über diesen Tool-Aufruf wurde bereits entschieden: Status „gelöscht“."


def test_a_cancel_frees_only_its_own_conversation_and_marks_it_changed(api, ops, model, approver_api):
    [call] = waiting_calls(api, ops, model, "a")
    other = approver_api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    waiting_calls(approver_api, other, model, "b")  # carol's call waits too
    before = Conversation.objects.get(pk=ops["id"]).updated_at
    assert api.post(f"/api/toolcalling/conversations/{ops['id']}/cancel/").status_code == 200
    freed = Conversation.objects.get(pk=ops["id"])
    assert freed.status == "idle" and freed.updated_at > before
    assert Conversation.objects.get(pk=other["id"]).status == "awaiting_approval"


def test_a_cancel_leaves_a_conversation_that_something_else_took_meanwhile(api, ops, model):
    first, second = waiting_calls(api, ops, model, "a", "b")

    def taken(sender, tool_call, **kwargs):
        if tool_call.pk == second.pk:  # as the last call is cancelled, a turn claims the conversation
            Conversation.objects.filter(pk=ops["id"]).update(status="running")

    with on(signals.tool_call_cancelled, taken):
        assert len(approval.cancel_waiting(Conversation.objects.get(pk=ops["id"]), first.conversation.user)) == 2
    assert Conversation.objects.get(pk=ops["id"]).status == "running"  # the claim wins; the cancel frees nothing


def test_a_rejection_without_a_reason_says_only_who_said_no(api, ops, model, approver):
    [call] = waiting_calls(api, ops, model, "a")
    model.reply("Rejected.")
    before = timezone.now()
    approval.reject(call, approver)
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decision_reason) == ("rejected", approver, "")
    assert before <= call.decided_at <= timezone.now()
    assert tool_message(call).content == "Not run: a staff member rejected this call."
    entry = LogEntry.objects.get(object_id=str(call.pk))
    assert (entry.user_id, entry.change_message) == (approver.pk, "Rejected.")


def test_a_staff_member_may_reject_a_call_of_their_own_conversation(approver, approver_api, model):
    own = approver_api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    [call] = waiting_calls(approver_api, own, model, "mine")
    model.reply("Rejected.")
    approval.reject(call, approver, "changed my mind")
    assert ToolCall.objects.get(pk=call.pk).status == "rejected"


def test_a_user_who_declines_without_a_reason_is_logged_as_declining(api, ops, model, alice):
    model.call("move_points", {"name": "savings", "points": 3})
    response = post(api, ops, "move points")
    call = ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])
    model.reply("Not moved.")
    approval.reject(call, alice)
    assert tool_message(call).content == "Not run: the user declined this call."
    entry = LogEntry.objects.get(object_id=str(call.pk))
    assert (entry.user_id, entry.change_message) == (alice.pk, "Declined by the user.")


def test_receivers_of_a_rejection_hear_who_rejected_it_and_why(api, ops, model, approver):
    [call] = waiting_calls(api, ops, model, "a")
    heard = []

    def receiver(sender, tool_call, **kwargs):
        heard.append((tool_call.pk, kwargs["user"], kwargs["reason"]))

    model.reply("Rejected.")
    with on(signals.tool_call_rejected, receiver):
        approval.reject(call, approver, "not today")
    assert heard == [(call.pk, approver, "not today")]


def test_approvals_are_logged_in_the_approvers_language(api, ops, model, approver, django_capture_on_commit_callbacks):
    plain, edited = waiting_calls(api, ops, model, "a", "b")
    model.reply("Both ran.")
    with translation.override("de"), django_capture_on_commit_callbacks(execute=True):
        approval.approve(plain, approver)
        approval.approve(edited, approver, {"name": "b", "by": 2})
    logged = {entry.object_id: entry.change_message for entry in LogEntry.objects.all()}
    assert logged == {str(plain.pk): "Genehmigt.", str(edited.pk): "Mit bearbeiteten Argumenten genehmigt."}


def test_decisions_are_stored_and_logged_in_the_users_language(api, ops, model, approver):
    first, second, third = waiting_calls(api, ops, model, "a", "b", "c")
    model.reply("None of them ran.")
    with translation.override("de"):
        approval.reject(first, approver, reason="zu teuer")
        approval.reject(second, approver)
        with override_toolcalling(APPROVAL_TIMEOUT=3600):
            assert approval.expire(now=third.created_at + timedelta(hours=2)) == [third]
    logged = {entry.object_id: entry.change_message for entry in LogEntry.objects.all()}
    assert logged == {str(first.pk): "Abgelehnt: zu teuer", str(second.pk): "Abgelehnt."}
    third.refresh_from_db()
    assert (third.status, third.decision_reason) == ("expired", "Abgelaufen.")


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
@pytest.mark.parametrize("decide", ["reject", "approve"])
def test_a_decision_is_one_transaction_on_the_routers_database(api, ops, model, approver, decide):
    [call] = waiting_calls(api, ops, model, "a")
    signal = {"reject": signals.tool_call_rejected, "approve": signals.tool_call_approved}[decide]

    def fails(**kwargs):
        raise RuntimeError("a site's receiver failed")

    with (
        writes_elsewhere(),
        on(signal, fails),
        pytest.raises(RuntimeError),
    ):
        getattr(approval, decide)(call, approver)
    # The receiver runs inside the decision's transaction, so its failure undoes it: the call's status, who decided
    # and when, a rejection's answer, the log entry; and an approval's run is never queued.
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decided_at) == ("awaiting_approval", None, None)
    assert not Message.objects.filter(conversation_id=call.conversation_id, role="tool").exists()
    assert Conversation.objects.get(pk=ops["id"]).status == "awaiting_approval"
    assert not LogEntry.objects.filter(object_id=str(call.pk)).exists()


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
def test_an_approval_inside_a_transaction_on_the_routers_database_runs_the_call_once_that_commits(
    api, ops, model, approver
):
    [call] = waiting_calls(api, ops, model, "a")
    model.reply("Bumped.")
    with writes_elsewhere():
        with transaction.atomic(using=WRITES):  # the site's own transaction, where the app writes
            approval.approve(call, approver)
            # Queued for the commit: nothing runs while the approval could still be undone.
            assert ToolCall.objects.using(WRITES).get(pk=call.pk).status == "approved"
            assert len(transaction.get_connection(WRITES).run_on_commit) == 1
        call.refresh_from_db()
    assert (call.status, counter("a")) == ("succeeded", 1)
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    model.assert_done()


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
def test_a_rejection_on_the_routers_database_continues_the_conversation_once_that_commits(api, ops, model, approver):
    [call] = waiting_calls(api, ops, model, "a")
    model.reply("Not bumped.")
    with writes_elsewhere():
        approval.reject(call, approver, reason="no")
    # The continuation read the stored rejection back from the router's read database: it had been committed.
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    assert Message.objects.filter(conversation_id=ops["id"]).order_by("id").last().content == "Not bumped."
    model.assert_done()


@pytest.mark.django_db(transaction=True, databases=["default", WRITES])
def test_a_decision_reads_the_conversations_status_again_where_it_writes_not_on_a_read_database_behind(
    api, ops, model, approver
):
    [call] = waiting_calls(api, ops, model, "a")
    model.reply("Not bumped.")
    with writes_elsewhere():
        Conversation.objects.filter(pk=ops["id"]).update(status=Conversation.Status.RUNNING)
        with transaction.atomic(using=WRITES):
            # Written where the app writes, not committed yet: the read database (a replica behind) sees "running".
            Conversation.objects.filter(pk=ops["id"]).update(status=Conversation.Status.AWAITING_APPROVAL)
            stale = ToolCall.objects.select_related("conversation").get(pk=call.pk)
            assert stale.conversation.status == "running"
            approval.reject(stale, approver, reason="no")
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    model.assert_done()


def test_decisions_are_sent_by_the_tool_call_model_so_a_receiver_may_listen_for_it_alone(api, ops, model, approver):
    [call] = waiting_calls(api, ops, model, "a")
    heard = []

    def receiver(sender, tool_call, **kwargs):
        heard.append((sender, tool_call.pk))

    model.reply("Rejected.")
    signals.tool_call_rejected.connect(receiver, sender=ToolCall)
    try:
        approval.reject(call, approver)
    finally:
        signals.tool_call_rejected.disconnect(receiver, sender=ToolCall)
    assert heard == [(ToolCall, call.pk)]


def test_a_decision_is_published_on_the_conversations_event_stream_as_it_is_stored(api, ops, model, approver):
    from toolcalling import streaming

    [call] = waiting_calls(api, ops, model, "a")
    before = streaming.last_seq(ops["id"])
    model.reply("Rejected.")
    approval.reject(call, approver)
    decided = [e for e in streaming.read(ops["id"], before, timeout=0) if e.type == "tool_call_decided"]
    assert [e.data for e in decided] == [
        {
            "id": call.pk,
            "call_id": call.call_id,
            "name": "bump",
            "label": "Bump",
            "status": "rejected",
            "approver": "staff",
        }
    ]
