"""Gated calls wait; the user may cancel; approvers decide through the API (tasks run eagerly here)."""

import io
import json
from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.core.management import call_command
from django.utils import timezone

from tests.approvalapp.models import Counter
from tests.history import history_problems
from toolcalling import signals
from toolcalling.approval._runs import WORKER_STOPPED, start_run
from toolcalling.model_apis import reasoning_items
from toolcalling.models import Conversation, Message, ToolCall
from toolcalling.tasks import expire_waiting_tool_calls
from toolcalling.testutils import override_toolcalling


def post(api, conversation, content="hi"):
    return api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/messages/", {"content": content}, format="json"
    )


def counter(name):
    row = Counter.objects.filter(name=name).first()
    return row.value if row else 0


def tool_message(call):
    return Message.objects.get(conversation_id=call.conversation_id, role="tool", tool_call_id=call.call_id)


def assert_history_valid(conversation_id):
    """As the conversation's model API would send it next."""
    assert history_problems(conversation_id) == []


@pytest.fixture
def waiting(api, ops, model):
    """alice asked for a gated ``bump``; it waits for a decision."""
    model.call("bump", {"name": "orders", "by": 2})
    response = post(api, ops, "bump the orders counter by 2")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


# Marking and waiting -------------------------------------------------------------------------------


def test_callable_rule_gates_only_large_refunds_and_other_calls_run_at_once(api, ops, model):
    model.calls(("refund", {"order_no": "A1", "amount": 50}), ("refund", {"order_no": "B2", "amount": 500}))
    response = post(api, ops, "refund both")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "awaiting_approval"
    assert [(c["name"], c["arguments"]) for c in body["awaiting_approval"]] == [
        ("refund", {"order_no": "B2", "amount": 500.0})
    ]
    small, large = ToolCall.objects.filter(conversation_id=ops["id"]).order_by("index")
    assert (small.status, small.requires_approval) == ("succeeded", False)
    assert tool_message(small).content == "refunded 50.00 on A1 for alice"
    assert (large.status, large.requires_approval) == ("awaiting_approval", True)
    assert counter("refund-A1") == 1 and counter("refund-B2") == 0
    assert not Message.objects.filter(role="tool", tool_call_id=large.call_id).exists()
    assert Conversation.objects.get(pk=ops["id"]).status == "awaiting_approval"
    assert len(model.requests) == 1  # the model is not asked again while a call waits


def test_invalid_arguments_of_a_gated_tool_go_back_to_the_model_and_are_never_queued(api, ops, model):
    model.call("bump", {"by": "lots"})
    model.reply("Sorry, I need a counter name.")
    response = post(api, ops, "bump")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "idle"
    call = ToolCall.objects.get(conversation_id=ops["id"])
    assert call.status == "failed" and not call.requires_approval
    assert "invalid arguments for bump" in tool_message(call).content
    assert not ToolCall.objects.filter(status="awaiting_approval").exists()


def test_a_new_message_while_waiting_is_a_409_and_changes_nothing(api, ops, waiting, model):
    before = Message.objects.filter(conversation_id=ops["id"]).count()
    response = post(api, ops, "hello?")
    assert response.status_code == 409
    assert "waiting for a staff member to approve" in response.json()["detail"]
    assert Message.objects.filter(conversation_id=ops["id"]).count() == before
    assert len(model.requests) == 1


def test_approval_requested_is_sent_with_the_waiting_call(api, ops, model):
    seen = []

    def receiver(sender, tool_call, **kwargs):
        seen.append((tool_call.name, tool_call.status))

    signals.approval_requested.connect(receiver)
    try:
        model.call("bump", {"name": "x"})
        post(api, ops, "bump x")
    finally:
        signals.approval_requested.disconnect(receiver)
    assert seen == [("bump", "awaiting_approval")]


# Cancelling ----------------------------------------------------------------------------------------


def test_cancel_answers_waiting_calls_as_cancelled_and_frees_the_conversation(api, ops, waiting, model):
    response = api.post(f"/api/toolcalling/conversations/{ops['id']}/cancel/")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "idle"
    waiting.refresh_from_db()
    assert waiting.status == "cancelled"
    assert "the user cancelled this call" in tool_message(waiting).content
    assert counter("orders") == 0
    assert len(model.requests) == 1  # cancelling does not ask the model
    assert_history_valid(ops["id"])
    model.reply("Fine, nothing was bumped.")
    again = post(api, ops, "never mind")
    assert again.status_code == 201 and again.json()["status"] == "idle"
    assert LogEntry.objects.filter(object_id=str(waiting.pk), change_message="Cancelled by the user.").exists()


def test_cancel_without_waiting_calls_is_a_409_and_another_users_conversation_a_404(api, ops, bob, model):
    response = api.post(f"/api/toolcalling/conversations/{ops['id']}/cancel/")
    assert response.status_code == 409
    assert "No tool call of this conversation is waiting" in response.json()["detail"]
    api.force_authenticate(bob)
    assert api.post(f"/api/toolcalling/conversations/{ops['id']}/cancel/").status_code == 404


# Deciding through the API ----------------------------------------------------------------------------


def test_only_approvers_may_decide(api, waiting):
    for verb in ("approve", "reject"):
        response = api.post(f"/api/toolcalling/tool-calls/{waiting.pk}/{verb}/", {}, format="json")
        assert response.status_code == 403
        assert "toolcalling.approve_toolcall" in response.json()["detail"]
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_approvers_list_waiting_calls_with_their_requester(approver_api, waiting):
    response = approver_api.get("/api/toolcalling/tool-calls/?status=awaiting_approval")
    assert response.status_code == 200
    [item] = response.json()["results"] if "results" in response.json() else response.json()
    assert (item["id"], item["name"], item["user"], item["arguments"]) == (
        waiting.pk,
        "bump",
        "alice",
        {"name": "orders", "by": 2},
    )


@pytest.mark.each_api
def test_approve_runs_the_call_as_the_requester_and_the_model_answers(
    api, ops, waiting, approver, approver_api, model, django_capture_on_commit_callbacks
):
    model.reply("Done: the counter is at 2.")
    with django_capture_on_commit_callbacks(execute=True):
        response = approver_api.post(f"/api/toolcalling/tool-calls/{waiting.pk}/approve/", {}, format="json")
    assert response.status_code == 200, response.content
    waiting.refresh_from_db()
    assert waiting.status == "succeeded" and waiting.decided_by == approver and waiting.decided_at
    result = json.loads(tool_message(waiting).content)
    assert (result["user"], result["tenant"], result["value"]) == ("alice", "ops-tenant", 2)
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    messages = api.get(f"/api/toolcalling/conversations/{ops['id']}/messages/").json()
    assert messages[-1]["content"] == "Done: the counter is at 2."
    assert model.messages(-1)[-1]["role"] == "tool"
    assert LogEntry.objects.filter(object_id=str(waiting.pk), change_message="Approved.").exists()
    again = approver_api.post(f"/api/toolcalling/tool-calls/{waiting.pk}/approve/", {}, format="json")
    assert again.status_code == 409
    assert again.json()["detail"] == "This tool call was already decided: it is succeeded."
    assert counter("orders") == 2
    assert_history_valid(ops["id"])
    model.assert_done()


@pytest.mark.parametrize("model_api", ["anthropic"])
def test_after_an_approval_the_answer_goes_back_with_its_thinking_block_unchanged(
    api, ops, waiting, approver_api, model, django_capture_on_commit_callbacks
):
    # The continuation is a later request (another process, maybe): the thinking block comes from the database.
    asked = Message.objects.get(conversation_id=ops["id"], role="assistant")
    thinking = reasoning_items(asked.provider_items)
    assert [item["type"] for item in thinking] == ["thinking"] and thinking[0]["signature"]
    model.reply("Done.")
    with django_capture_on_commit_callbacks(execute=True):
        response = approver_api.post(f"/api/toolcalling/tool-calls/{waiting.pk}/approve/", {}, format="json")
    assert response.status_code == 200, response.content
    continuation = model.last_request
    answer = next(m for m in continuation["messages"] if m["role"] == "assistant")
    assert answer["content"][0] == thinking[0]
    assert [b["type"] for b in answer["content"]] == ["thinking", "tool_use"]
    assert continuation["messages"][-1]["content"][0]["tool_use_id"] == waiting.call_id
    model.assert_done()  # the strict server refused nothing


@pytest.mark.each_api
def test_reject_tells_the_model_the_reason_and_the_conversation_goes_on(
    api, ops, waiting, approver, approver_api, model, django_capture_on_commit_callbacks
):
    model.reply("A staff member declined: counters are frozen today.")
    with django_capture_on_commit_callbacks(execute=True):
        response = approver_api.post(
            f"/api/toolcalling/tool-calls/{waiting.pk}/reject/", {"reason": "Counters are frozen today."}
        )
    assert response.status_code == 200, response.content
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision_reason, waiting.decided_by) == (
        "rejected",
        "Counters are frozen today.",
        approver,
    )
    assert tool_message(waiting).content == (
        "Not run: a staff member rejected this call. Reason: Counters are frozen today."
    )
    assert model.messages(-1)[-1]["content"] == tool_message(waiting).content
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    assert counter("orders") == 0
    assert approver_api.post(f"/api/toolcalling/tool-calls/{waiting.pk}/approve/").status_code == 409
    model.assert_done()


def test_edited_arguments_are_validated_kept_apart_and_told_to_the_model(
    ops, waiting, approver_api, model, django_capture_on_commit_callbacks
):
    url = f"/api/toolcalling/tool-calls/{waiting.pk}/approve/"
    bad = approver_api.post(url, {"arguments": {"name": "orders", "by": "ten"}}, format="json")
    assert bad.status_code == 400
    assert "by" in bad.json()["arguments"][0]
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval" and waiting.arguments == {"name": "orders", "by": 2}
    model.reply("Bumped by 1 instead.")
    with django_capture_on_commit_callbacks(execute=True):
        good = approver_api.post(url, {"arguments": {"name": "orders", "by": 1}}, format="json")
    assert good.status_code == 200, good.content
    waiting.refresh_from_db()
    assert waiting.arguments == {"name": "orders", "by": 1}
    assert waiting.original_arguments == {"name": "orders", "by": 2}
    assert json.loads(waiting.raw_arguments) == {"name": "orders", "by": 2}  # the history keeps the model's own
    text = tool_message(waiting).content
    assert text.startswith('Note: a staff member changed the arguments before approving; the tool ran with {"by": 1')
    assert counter("orders") == 1
    assert LogEntry.objects.filter(object_id=str(waiting.pk), change_message="Approved with edited arguments.").exists()
    model.assert_done()


# Running exactly once (the task, called directly) ------------------------------------------------------


def test_a_redelivered_task_does_not_run_the_call_twice(
    ops, waiting, approver, model, django_capture_on_commit_callbacks
):
    from toolcalling import approval
    from toolcalling.tasks import run_approved_tool_call

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        approval.approve(waiting, approver)
    assert len(callbacks) == 1  # the enqueue waits for the commit
    model.reply("Bumped.")
    with django_capture_on_commit_callbacks(execute=True):
        assert run_approved_tool_call.apply(args=[waiting.pk]).get() is True
        assert run_approved_tool_call.apply(args=[waiting.pk]).get() is False
    waiting.refresh_from_db()
    assert waiting.status == "succeeded"
    assert counter("orders") == 2  # one run of by=2
    assert Message.objects.filter(role="tool", tool_call_id=waiting.call_id).count() == 1
    model.assert_done()


def test_a_call_left_running_by_a_stopped_worker_waits_for_a_person_and_is_never_rerun(
    ops, waiting, approver, model, django_capture_on_commit_callbacks
):
    from toolcalling import approval
    from toolcalling.tasks import run_approved_tool_call

    with django_capture_on_commit_callbacks(execute=False):
        approval.approve(waiting, approver)
    assert start_run(waiting.pk) is not None  # a worker took it, then died before answering
    # A redelivery while the run's lease lasts leaves it alone: the first worker may still be running it.
    assert run_approved_tool_call.apply(args=[waiting.pk]).get() is False
    waiting.refresh_from_db()
    assert waiting.status == "running" and not Message.objects.filter(role="tool", tool_call_id=waiting.call_id)
    # Once the lease has ended, the worker is taken to be gone: ``bump`` may not run again, so the next delivery
    # leaves it to a person (its outcome is unknown), and the conversation waits.
    ToolCall.objects.filter(pk=waiting.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert run_approved_tool_call.apply(args=[waiting.pk]).get() is False  # the redelivery
    waiting.refresh_from_db()
    assert (waiting.status, waiting.error) == ("outcome_unknown", "the worker stopped while running this call")
    assert counter("orders") == 0
    assert not Message.objects.filter(role="tool", tool_call_id=waiting.call_id).exists()
    assert Conversation.objects.get(pk=ops["id"]).status == "awaiting_approval"
    model.reply("Something went wrong on our side; please check the counter.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.settle(waiting, approver, "failed", "The counter was not changed.")
    assert "did not take effect" in tool_message(waiting).content
    assert counter("orders") == 0
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    assert_history_valid(ops["id"])
    model.assert_done()


# Expiry ------------------------------------------------------------------------------------------------


def test_expired_calls_are_told_to_the_model_and_the_conversation_goes_on(
    ops, waiting, model, django_capture_on_commit_callbacks
):
    model.reply("Nobody approved it in time.")
    with override_toolcalling(APPROVAL_TIMEOUT=3600):
        with django_capture_on_commit_callbacks(execute=True):
            assert expire_waiting_tool_calls.apply().get() == {"expired": [], "failed": [], "continued": []}  # not yet
        ToolCall.objects.filter(pk=waiting.pk).update(created_at=waiting.created_at.replace(year=2000))
        with django_capture_on_commit_callbacks(execute=True):
            out = io.StringIO()
            call_command("toolcalling_expire", stdout=out)
    assert f"expired #{waiting.pk} bump" in out.getvalue()
    waiting.refresh_from_db()
    assert waiting.status == "expired"
    assert tool_message(waiting).content == "Not run: no staff member decided within 1 hour, so the request expired."
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    assert counter("orders") == 0
    model.assert_done()


def test_a_sweep_leaves_approved_calls_running_too_long_to_a_person(
    ops, waiting, approver, model, django_capture_on_commit_callbacks
):
    from toolcalling import approval

    with django_capture_on_commit_callbacks(execute=False):
        approval.approve(waiting, approver)
    start_run(waiting.pk)
    with django_capture_on_commit_callbacks(execute=True):
        assert expire_waiting_tool_calls.apply().get()["failed"] == []  # its lease still lasts
    ToolCall.objects.filter(pk=waiting.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert expire_waiting_tool_calls.apply().get() == {"expired": [], "failed": [waiting.pk], "continued": []}
    waiting.refresh_from_db()
    assert waiting.status == "outcome_unknown" and waiting.error == WORKER_STOPPED
    assert Conversation.objects.get(pk=ops["id"]).status == "awaiting_approval"
    model.reply("The operation happened after all.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.settle(waiting, approver, "succeeded", "The counter shows the bump.")
    assert tool_message(waiting).content == "The counter shows the bump."
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    model.assert_done()


def test_signals_tell_a_site_about_every_decision(api, ops, approver, model, django_capture_on_commit_callbacks):
    from toolcalling import approval

    seen = []

    def recorder(name):
        return lambda sender, tool_call, **kw: seen.append((name, tool_call.name, kw.get("user")))

    names = ("tool_call_approved", "tool_call_rejected", "tool_call_cancelled", "tool_call_finished")
    receivers = {name: recorder(name) for name in names}
    for name, receiver in receivers.items():
        getattr(signals, name).connect(receiver)
    try:
        model.calls(("bump", {"name": "a"}), ("bump", {"name": "b"}), ("bump", {"name": "c"}))
        response = post(api, ops, "bump all")
        first, second, third = (ToolCall.objects.get(pk=c["id"]) for c in response.json()["awaiting_approval"])
        model.reply("a was bumped; b was rejected; you cancelled c.")
        with django_capture_on_commit_callbacks(execute=True):
            approval.approve(first, approver)
            approval.reject(second, approver, "no")
            # The approved call still runs, so the conversation waits for it and then goes on.
            approval.cancel_waiting(Conversation.objects.get(pk=ops["id"]), first.conversation.user)
    finally:
        for name, receiver in receivers.items():
            getattr(signals, name).disconnect(receiver)
    alice = first.conversation.user
    assert sorted(seen, key=lambda s: s[0]) == [
        ("tool_call_approved", "bump", approver),
        ("tool_call_cancelled", "bump", alice),
        ("tool_call_finished", "bump", None),
        ("tool_call_rejected", "bump", approver),
    ]
    assert ToolCall.objects.get(pk=third.pk).status == "cancelled"
    assert Conversation.objects.get(pk=ops["id"]).status == "idle"
    assert_history_valid(ops["id"])
    model.assert_done()


def test_the_readme_email_receiver_tells_approvers(api, ops, approver, model, mailoutbox):
    # The README's receiver is the demo shop's, connected in its AppConfig.ready() like a site would.
    approver.email = "carol@example.com"
    approver.save()
    model.call("bump", {"name": "orders"})
    call_id = post(api, ops, "bump").json()["awaiting_approval"][0]["id"]
    [mail] = mailoutbox
    assert mail.to == ["carol@example.com"] and mail.subject == "Approval needed: bump"
    assert f"http://testserver/admin/toolcalling/toolcall/{call_id}/change/" in mail.body
    assert "alice asked the assistant “Ops” to run bump." in mail.body
