"""A call whose worker died while it ran, found by the sweep once its lease ended: an idempotent tool runs again
with the same key, any other waits for a person ("outcome unknown"), who says it took effect, runs it again or
fails it, and the conversation goes on from that. The death is the row a killed worker leaves: ``running``,
its lease over. Tasks run eagerly here."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.approval.test_decisions import assert_history_valid, post, tool_message
from tests.approval.test_idempotency import delivered_keys
from toolcalling import ToolContext, approval, signals
from toolcalling.approval._runs import WORKER_STOPPED, start_run
from toolcalling.exceptions import AlreadyDecided, DecisionNotAllowed
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.notifications import approval_notice


@pytest.fixture
def till(api):
    response = api.post("/api/toolcalling/conversations/", {"assistant": "till"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def died_while_running(api, till, model, approver, tool, capture):
    """A call of ``tool`` approved (or confirmed), taken by a worker that was killed before it stored anything."""
    model.call(tool, {"amount": 3})
    response = post(api, till, f"{tool} 3")
    call = ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])
    with capture(execute=False):  # the worker takes the task ...
        approval.approve(call, approver)
    assert start_run(call.pk) is not None
    # ... and is killed: the row stays ``running``, its lease runs out.
    ToolCall.objects.filter(pk=call.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    call.refresh_from_db()
    return call


def test_an_idempotent_call_whose_worker_died_runs_again_with_the_same_key(
    api, till, model, approver, django_capture_on_commit_callbacks
):
    call = died_while_running(api, till, model, approver, "approved_receipt", django_capture_on_commit_callbacks)
    key = ToolContext(user=None, tool_call=call).idempotency_key
    model.reply("The receipt is on its way.")
    with django_capture_on_commit_callbacks(execute=True):
        result = approval.sweep()
    assert [c.pk for c in result.retried] == [call.pk] and result.unknown == []
    call.refresh_from_db()
    assert call.status == "succeeded" and call.result == f"receipt sent with key {key}"
    assert delivered_keys("receipt") == {key: 1}
    assert Conversation.objects.get(pk=till["id"]).status == "idle"
    assert_history_valid(till["id"])
    model.assert_done()


def test_a_redelivery_after_the_lease_ended_runs_an_idempotent_call_again_once(
    api, till, model, approver, django_capture_on_commit_callbacks
):
    from toolcalling.tasks import run_approved_tool_call

    call = died_while_running(api, till, model, approver, "approved_receipt", django_capture_on_commit_callbacks)
    model.reply("Sent.")
    with django_capture_on_commit_callbacks(execute=True):
        assert run_approved_tool_call.apply(args=[call.pk]).get() is True  # takes over the ended lease
        assert run_approved_tool_call.apply(args=[call.pk]).get() is False  # and only once
    assert list(delivered_keys("receipt").values()) == [1]
    model.assert_done()


def test_a_call_of_another_tool_whose_worker_died_waits_for_staff_who_may_run_it_again(
    api, till, model, approver, django_capture_on_commit_callbacks
):
    call = died_while_running(api, till, model, approver, "approved_charge", django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        result = approval.sweep()
    assert [c.pk for c in result.unknown] == [call.pk] and result.retried == []
    call.refresh_from_db()
    assert (call.status, call.error) == ("outcome_unknown", WORKER_STOPPED)
    assert call.worker and call.started_at is not None  # what the desk shows: who ran it, since when
    assert delivered_keys("charge") == {}  # never run again silently
    assert not Message.objects.filter(role="tool", tool_call_id=call.call_id).exists()
    assert Conversation.objects.get(pk=till["id"]).status == "awaiting_approval"
    assert approval.sweep().unknown == []  # found once

    model.reply("Charged.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.settle(call, approver, "retry")
    call.refresh_from_db()
    assert call.status == "succeeded"
    assert delivered_keys("charge") == {ToolContext(user=None, tool_call=call).idempotency_key: 1}
    assert Conversation.objects.get(pk=till["id"]).status == "idle"
    with pytest.raises(AlreadyDecided):
        approval.settle(call, approver, "failed")
    assert_history_valid(till["id"])
    model.assert_done()


def test_a_user_confirmed_call_whose_worker_died_is_settled_by_its_user_not_by_staff(
    api, alice, till, model, approver, django_capture_on_commit_callbacks
):
    call = died_while_running(api, till, model, alice, "confirmed_charge", django_capture_on_commit_callbacks)
    approval.sweep()
    call.refresh_from_db()
    assert call.status == "outcome_unknown"
    with pytest.raises(DecisionNotAllowed):
        approval.settle(call, approver, "succeeded")
    model.reply("Your card was charged.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.settle(call, alice, "succeeded", "Charged 3 (seen on the statement).")
    assert tool_message(call).content == "Charged 3 (seen on the statement)."
    call.refresh_from_db()
    assert (call.status, call.decided_by) == ("succeeded", alice)
    assert delivered_keys("charge") == {}
    assert Conversation.objects.get(pk=till["id"]).status == "idle"
    model.assert_done()


def test_failing_a_call_of_unknown_outcome_tells_the_model_what_was_found(
    api, till, model, approver, django_capture_on_commit_callbacks
):
    call = died_while_running(api, till, model, approver, "approved_charge", django_capture_on_commit_callbacks)
    approval.sweep()
    model.reply("The charge did not go through.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.settle(approval_call := ToolCall.objects.get(pk=call.pk), approver, "failed", "No payment arrived.")
    message = tool_message(approval_call)
    assert message.is_error
    assert message.content.endswith("No payment arrived.") and "did not take effect" in message.content
    assert Conversation.objects.get(pk=till["id"]).status == "idle"
    model.assert_done()


def test_the_user_settles_a_confirmed_call_of_unknown_outcome_through_the_api(
    api, alice, approver_api, till, model, django_capture_on_commit_callbacks
):
    call = died_while_running(api, till, model, alice, "confirmed_charge", django_capture_on_commit_callbacks)
    approval.sweep()
    url = f"/api/toolcalling/tool-calls/{call.pk}/settle/"
    refused = approver_api.post(url, {"outcome": "failed"}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")  # staff do not decide it
    assert api.post(url, {"outcome": "maybe"}, format="json").status_code == 400
    model.reply("Charged, then.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url, {"outcome": "retry"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"  # the run is queued as the request's transaction commits
    assert ToolCall.objects.get(pk=call.pk).status == "succeeded"
    assert list(delivered_keys("charge").values()) == [1]
    again = api.post(url, {"outcome": "failed"}, format="json")
    assert (again.status_code, again.json()["code"], again.json()["status"]) == (409, "already_decided", "succeeded")
    assert Conversation.objects.get(pk=till["id"]).status == "idle"
    model.assert_done()


def test_staff_are_told_when_a_call_whose_worker_died_waits_for_them(
    api, till, model, approver, mailoutbox, django_capture_on_commit_callbacks
):
    # The demo shop's receiver (connected in its AppConfig.ready(), as a site would) tells approvers of both.
    approver.email = "carol@example.com"
    approver.save()
    heard = []
    signals.tool_call_outcome_unknown.connect(receiver := lambda sender, tool_call, **kw: heard.append(tool_call))
    try:
        call = died_while_running(api, till, model, approver, "approved_charge", django_capture_on_commit_callbacks)
        mailoutbox.clear()  # the approval's own notice
        ToolCall.objects.filter(pk=call.pk).update(worker="worker-7.example:4242")
        approval.sweep()
        approval.sweep()  # found once, told once
    finally:
        signals.tool_call_outcome_unknown.disconnect(receiver)
    assert [(c.pk, c.status) for c in heard] == [(call.pk, "outcome_unknown")]
    [mail] = mailoutbox
    assert mail.to == ["carol@example.com"] and mail.subject == "Outcome unknown: approved_charge"
    assert "alice asked the assistant “Till” to run approved_charge." in mail.body
    assert "before its result was stored, so whether it took effect is unknown" in mail.body
    assert "on worker-7.example:4242." in mail.body
    assert mail.body.endswith(
        "Say what happened here (it took effect, it did not, or run it again): "
        f"http://testserver/admin/toolcalling/toolcall/{call.pk}/change/\n"
    )
    german = approval_notice(ToolCall.objects.get(pk=call.pk), language="de")
    assert german.subject == "Ergebnis unbekannt: approved_charge" and "auf worker-7.example:4242." in german.body


def test_a_redelivery_that_finds_the_worker_dead_tells_staff_too(
    api, till, model, approver, mailoutbox, django_capture_on_commit_callbacks
):
    from toolcalling.tasks import run_approved_tool_call

    approver.email = "carol@example.com"
    approver.save()
    call = died_while_running(api, till, model, approver, "approved_charge", django_capture_on_commit_callbacks)
    mailoutbox.clear()
    assert run_approved_tool_call.apply(args=[call.pk]).get() is False  # not run again: its outcome is unknown
    assert ToolCall.objects.get(pk=call.pk).status == "outcome_unknown"
    assert [m.subject for m in mailoutbox] == ["Outcome unknown: approved_charge"]


def test_staff_are_not_told_of_a_user_confirmed_call_of_unknown_outcome(
    api, alice, till, model, approver, mailoutbox, django_capture_on_commit_callbacks
):
    approver.email = "carol@example.com"
    approver.save()
    call = died_while_running(api, till, model, alice, "confirmed_charge", django_capture_on_commit_callbacks)
    approval.sweep()
    assert ToolCall.objects.get(pk=call.pk).status == "outcome_unknown"
    assert mailoutbox == []  # its user says what happened, on the chat page
