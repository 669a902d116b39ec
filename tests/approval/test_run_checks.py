"""What the run of an approved call checks again, and what a turn's call limits count once it goes on after an
approval (tasks run eagerly here; the worker tests show the same path in a worker process)."""

from collections.abc import Iterator

import pytest

from tests.approval.test_decisions import counter, post, tool_message
from tests.approvalapp.models import Counter
from toolcalling import Assistant, ToolContext, approval, tool
from toolcalling.models import ToolCall
from toolcalling.toolkit import assistants, tools


def waiting(api, conversation, model, name, arguments):
    model.call(name, arguments)
    response = post(api, conversation, "please")
    assert response.status_code == 201, response.content
    return ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])


@pytest.fixture
def kiosk(api) -> Iterator[tuple[type[Assistant], dict]]:
    """An assistant whose one tool is gated; a test may take the tool off the assistant while a call waits."""

    @tool(requires_approval=True)
    def restock(ctx: ToolContext, item: str) -> str:
        """Order more of an item."""
        Counter.objects.create(name=f"restock-{item}")
        return f"ordered {item} for {ctx.user.get_username()} in {ctx.conversation.pk} (call {ctx.tool_call.pk})"

    class KioskAssistant(Assistant):
        id = "kiosk-run-test"
        tools = ["restock"]

    try:
        response = api.post("/api/toolcalling/conversations/", {"assistant": KioskAssistant.id}, format="json")
        yield KioskAssistant, response.json()
    finally:
        assistants.unregister(KioskAssistant.id)
        if tools.is_registered("restock"):
            tools.unregister("restock")


def test_a_tool_the_assistant_no_longer_offers_is_not_run(
    api, kiosk, model, approver, django_capture_on_commit_callbacks
):
    assistant, conversation = kiosk
    call = waiting(api, conversation, model, "restock", {"item": "milk"})
    assistant.tools = []  # the site took the tool off this assistant before anyone approved
    model.reply("That is not possible any more.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.approve(call, approver)
    call.refresh_from_db()
    assert (call.status, tool_message(call).content) == ("failed", "Error: the tool 'restock' is not available.")
    assert call.error == "the tool 'restock' is not available"  # the reason is stored, as for every failure
    assert not Counter.objects.filter(name="restock-milk").exists()
    model.assert_done()


def test_stored_arguments_that_no_longer_fit_the_tool_are_not_run(
    api, ops, model, approver, django_capture_on_commit_callbacks
):
    call = waiting(api, ops, model, "bump", {"name": "orders", "by": 2})
    ToolCall.objects.filter(pk=call.pk).update(arguments={"name": "orders", "by": "lots"})  # e.g. from an old release
    model.reply("The stored request was broken.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.approve(ToolCall.objects.get(pk=call.pk), approver)
    call.refresh_from_db()
    assert call.status == "failed"
    assert tool_message(call).content.startswith(
        "Error: invalid arguments for bump: by: Input should be a valid integer"
    )
    assert call.error.startswith("invalid arguments for bump: by: Input should be a valid integer")
    assert counter("orders") == 0
    model.assert_done()


@pytest.mark.toolcalling(MAX_CALLS_PER_TOOL=2)
def test_the_calls_before_the_wait_count_towards_the_limits_of_the_turn(
    api, ops, model, approver, django_capture_on_commit_callbacks
):
    model.calls(("add", {"a": 1, "b": 1}), ("bump", {"name": "orders"}))
    response = post(api, ops, "add, then bump")
    call = ToolCall.objects.get(pk=response.json()["awaiting_approval"][0]["id"])
    model.calls(("add", {"a": 2, "b": 2}), ("add", {"a": 3, "b": 3}))  # the turn goes on after the approval
    model.reply("Done.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.approve(call, approver)
    results = [m["content"] for m in model.messages(-1) if m["role"] == "tool"]
    assert results[-2] == "4"  # the second add of the turn
    assert results[-1] == "Error: not run, the limit is at most 2 calls to 'add' per turn."
    model.calls(("add", {"a": 4, "b": 4}), ("add", {"a": 5, "b": 5}))  # a new message is a new turn
    model.reply("Again.")
    post(api, ops, "and again")
    assert [m["content"] for m in model.messages(-1) if m["role"] == "tool"][-2:] == ["8", "10"]
    model.assert_done()


def test_a_tool_gone_from_the_site_is_answered_as_failed_without_running(
    api, kiosk, model, approver, django_capture_on_commit_callbacks
):
    _, conversation = kiosk
    call = waiting(api, conversation, model, "restock", {"item": "tea"})
    with django_capture_on_commit_callbacks(execute=False):  # the run is the task's, called here below
        approval.approve(call, approver)
    tools.unregister("restock")  # a deploy removed the tool before a worker ran the call
    with django_capture_on_commit_callbacks(execute=False) as continuation:
        assert approval.run(call.pk) is False
    call.refresh_from_db()
    assert call.status == "failed" and call.error.startswith("No tool named 'restock' is registered")
    assert tool_message(call).content == f"Error: not run: {call.error}"
    assert not Counter.objects.filter(name="restock-tea").exists()
    assert len(continuation) == 1  # the conversation goes on (and says so) once this commits


def test_an_approved_call_runs_as_the_requester_in_its_own_conversation(
    api, kiosk, model, approver, django_capture_on_commit_callbacks
):
    _, conversation = kiosk
    call = waiting(api, conversation, model, "restock", {"item": "milk"})
    model.reply("Ordered.")
    with django_capture_on_commit_callbacks(execute=True):
        approval.approve(call, approver)
    call.refresh_from_db()
    assert call.status == "succeeded" and call.error == ""
    assert tool_message(call).content == f"ordered milk for alice in {conversation['id']} (call {call.pk})"
    model.assert_done()
