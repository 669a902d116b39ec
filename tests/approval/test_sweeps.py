"""The sweep as of a given moment: it expires what waited too long (saying for how long, in words), fails runs
whose lease ended, including calls started before leases existed, and continues conversations a lost
continuation left waiting. Tasks run eagerly here."""

from datetime import timedelta

import pytest
from django.db.models.signals import post_save
from django.utils import timezone

from tests.approval.test_decisions import post, tool_message
from toolcalling import approval
from toolcalling.approval._runs import lease_expired, start_run
from toolcalling.approval._sweeps import continue_stalled, recover_stalled
from toolcalling.conf import toolcalling_settings
from toolcalling.models import Conversation, ToolCall
from toolcalling.testutils import override_toolcalling


def waiting_call(api, model, name):
    """A new conversation of alice's with ``ops`` whose gated ``bump`` waits for a decision."""
    conversation = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    model.call("bump", {"name": name})
    response = post(api, conversation, f"bump {name}")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


@pytest.mark.parametrize(
    ("timeout", "words"),
    [
        (24 * 3600, "24 hours"),
        (3600, "1 hour"),
        (2 * 3600, "2 hours"),
        (90 * 60, "90 minutes"),
        (60, "1 minute"),
        (120, "2 minutes"),
        (90, "90 seconds"),
        (1, "1 second"),
    ],
)
def test_an_expired_call_tells_the_model_how_long_it_waited_in_words(api, model, timeout, words):
    call = waiting_call(api, model, "late")
    model.reply("Nobody decided in time.")
    with override_toolcalling(APPROVAL_TIMEOUT=timeout):
        assert approval.expire(now=call.created_at + timedelta(seconds=timeout)) == []  # not longer than allowed
        assert [c.pk for c in approval.expire(now=call.created_at + timedelta(seconds=timeout + 1))] == [call.pk]
    expected = f"Not run: no staff member decided within {words}, so the request expired."
    assert tool_message(call).content == expected


def test_a_sweep_does_everything_that_is_due_at_the_moment_it_is_given(
    api, model, approver, django_capture_on_commit_callbacks
):
    later = timezone.now() + timedelta(seconds=toolcalling_settings.APPROVAL_TIMEOUT + 61)
    expiring = waiting_call(api, model, "expiring")
    running = waiting_call(api, model, "running")
    legacy = waiting_call(api, model, "legacy")
    lost = waiting_call(api, model, "lost")
    with django_capture_on_commit_callbacks(execute=False):  # the approvals' runs and the continuation get lost
        for call in (running, legacy):
            approval.approve(call, approver)
            assert start_run(call.pk) is not None
        approval.reject(lost, approver)
    # A run started before calls had leases: its timeout counts from when it started.
    ToolCall.objects.filter(pk=legacy.pk).update(lease_expires_at=None)
    for _ in range(2):
        model.reply("Noted.")
    with django_capture_on_commit_callbacks(execute=True):
        result = approval.sweep(now=later)
    assert [c.pk for c in result.expired] == [expiring.pk]
    # ``bump`` may not run again: the runs whose worker stopped wait for a person.
    assert (
        sorted(c.pk for c in result.unknown) == sorted([running.pk, legacy.pk]) == sorted(c.pk for c in result.failed)
    )
    assert result.retried == []
    # Every conversation left with nothing pending is continued again (each continuation claims it once).
    assert lost.conversation_id in {c.pk for c in result.continued}
    statuses = {c.pk: c.status for c in ToolCall.objects.filter(pk__in=[expiring.pk, running.pk, legacy.pk, lost.pk])}
    assert statuses == {
        expiring.pk: "expired",
        running.pk: "outcome_unknown",
        legacy.pk: "outcome_unknown",
        lost.pk: "rejected",
    }
    conversations = {c.pk: c.status for c in Conversation.objects.all()}
    assert conversations[expiring.conversation_id] == conversations[lost.conversation_id] == "idle"
    assert conversations[running.conversation_id] == conversations[legacy.conversation_id] == "awaiting_approval"
    model.assert_done()


def test_a_sweep_now_leaves_alone_what_is_not_due_yet(api, model, approver, django_capture_on_commit_callbacks):
    waiting = waiting_call(api, model, "waiting")
    running = waiting_call(api, model, "running")
    legacy = waiting_call(api, model, "legacy")
    with django_capture_on_commit_callbacks(execute=False):
        for call in (running, legacy):
            approval.approve(call, approver)
            assert start_run(call.pk) is not None
    ToolCall.objects.filter(pk=legacy.pk).update(lease_expires_at=None)
    result = approval.sweep()
    assert (result.expired, result.failed, result.continued) == ([], [], [])
    assert ToolCall.objects.get(pk=waiting.pk).status == "awaiting_approval"
    assert {c.status for c in ToolCall.objects.filter(pk__in=[running.pk, legacy.pk])} == {"running"}
    model.assert_done()


def test_a_lease_has_ended_at_its_end_and_a_run_without_one_when_its_timeout_is_over(api, model, approver):
    call = waiting_call(api, model, "leased")
    approval.approve(call, approver)
    before = timezone.now()
    started = start_run(call.pk)
    lease, began = started.lease_expires_at, started.started_at
    assert before <= began <= timezone.now()  # the run starts now, not when the call was asked for
    assert lease == began + timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    tick = timedelta(microseconds=1)
    assert not lease_expired(started, lease - tick)
    assert lease_expired(started, lease)
    started.lease_expires_at = None  # started before leases: started_at plus APPROVAL_RUN_TIMEOUT
    timeout = timedelta(seconds=toolcalling_settings.APPROVAL_RUN_TIMEOUT)
    assert not lease_expired(started, began + timeout - tick)
    assert lease_expired(started, began + timeout)
    started.started_at = None  # neither: nothing says it may still run
    assert lease_expired(started, began)


def test_a_lost_continuation_is_queued_again_once_it_is_more_than_a_minute_old(
    api, model, approver, django_capture_on_commit_callbacks
):
    finished = api.post("/api/toolcalling/conversations/", {"assistant": "ops"}, format="json").json()
    model.reply("Hello.")
    assert post(api, finished, "hi").json()["status"] == "idle"  # nothing to continue there, however old
    lost = waiting_call(api, model, "lost")
    with django_capture_on_commit_callbacks(execute=False):
        approval.reject(lost, approver)  # its continuation is never queued
    stalled = Conversation.objects.get(pk=lost.conversation_id)
    assert stalled.status == "awaiting_approval"
    minute = stalled.updated_at + timedelta(seconds=60)
    assert continue_stalled(now=minute) == []  # a continuation may still be on its way
    model.reply("Not bumped.")
    tick = timedelta(microseconds=1)
    assert [c.pk for c in continue_stalled(now=minute + tick)] == [stalled.pk]
    assert Conversation.objects.get(pk=stalled.pk).status == "idle"
    model.assert_done()


def test_a_sweep_lists_only_the_runs_it_recovered_not_one_whose_result_landed_meanwhile(api, model):
    first, second = waiting_call(api, model, "first"), waiting_call(api, model, "second")
    long_ago = timezone.now() - timedelta(days=1)
    ToolCall.objects.filter(pk__in=[first.pk, second.pk]).update(
        status=ToolCall.Status.RUNNING, started_at=long_ago, lease_expires_at=long_ago
    )

    def late_result(sender, instance, **kwargs):
        # While the sweep fails the first run, the second one's worker stores its result after all.
        if instance.pk == first.pk and instance.status == ToolCall.Status.OUTCOME_UNKNOWN:
            ToolCall.objects.filter(pk=second.pk).update(status=ToolCall.Status.SUCCEEDED, result="done")

    post_save.connect(late_result, sender=ToolCall)
    try:
        failed = [call for call, _ in recover_stalled(now=timezone.now())]
    finally:
        post_save.disconnect(late_result, sender=ToolCall)
    assert [call.pk for call in failed] == [first.pk]
    assert ToolCall.objects.get(pk=second.pk).status == "succeeded"


def test_a_sweep_leaves_alone_a_call_that_needs_no_approval_however_long_it_runs(api, model):
    call = waiting_call(api, model, "plain")
    long_ago = timezone.now() - timedelta(days=1)
    # A tool of a turn (not gated) still running: the turn's own process answers it, not a worker with a lease.
    ToolCall.objects.filter(pk=call.pk).update(
        status=ToolCall.Status.RUNNING, requires_approval=False, started_at=long_ago, lease_expires_at=None
    )
    assert recover_stalled(now=timezone.now()) == []
    assert ToolCall.objects.get(pk=call.pk).status == "running"


def test_a_run_whose_lease_still_lasts_is_left_alone_when_the_timeout_was_made_shorter_after_it_started(
    api, model, approver, django_capture_on_commit_callbacks
):
    call = waiting_call(api, model, "leased")
    with django_capture_on_commit_callbacks(execute=False):
        approval.approve(call, approver)
    started = start_run(call.pk)
    assert started is not None
    # The site shortens the timeout while the run goes on: its lease, set when it started, still holds.
    later = started.started_at + timedelta(seconds=61)
    with override_toolcalling(APPROVAL_RUN_TIMEOUT=60):
        assert later < started.lease_expires_at
        assert recover_stalled(now=later) == []
    assert ToolCall.objects.get(pk=call.pk).status == "running"


def test_a_decision_on_a_call_read_before_its_turn_stopped_to_wait_still_continues_the_conversation(
    api, model, approver, django_capture_on_commit_callbacks
):
    call = waiting_call(api, model, "stale")
    call.conversation.status = Conversation.Status.RUNNING  # as an approver's page read it, mid-turn
    model.reply("Not bumped.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.reject(call, approver)
    assert Conversation.objects.get(pk=call.conversation_id).status == "idle"
    model.assert_done()
