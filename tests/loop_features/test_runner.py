"""Running turns outside requests: Assistant.run, the stepper, and the toolcalling_chat command."""

import io

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command

from toolcalling import Assistant
from toolcalling.exceptions import ConversationBusy
from toolcalling.models import Conversation, ToolCall


def test_run_creates_a_conversation_and_returns_the_answer(strict_model, alice):
    strict_model.call("whoami", {})
    strict_model.reply("You are alice.")
    result = Assistant.get("helper").run(alice, "Who am I?")

    assert result.status == Conversation.Status.IDLE
    assert result.reply == "You are alice."
    assert result.conversation.user == alice
    assert result.conversation.assistant_id == "helper"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.tool_calls[0].result == '{"username":"alice","tenant":"acme"}'


def test_run_continues_a_given_conversation(strict_model, alice):
    strict_model.reply("one")
    strict_model.reply("two")
    first = Assistant.get("helper").run(alice, "1")
    second = Assistant.get("helper").run(alice, "2", first.conversation)
    assert second.conversation.pk == first.conversation.pk
    assert [m["role"] for m in strict_model.messages(1)] == ["system", "user", "assistant", "user"]


def test_run_refuses_another_users_conversation(strict_model, alice, bob):
    strict_model.reply("one")
    first = Assistant.get("helper").run(alice, "1")
    with pytest.raises(PermissionDenied):
        Assistant.get("helper").run(bob, "mine now", first.conversation)


def test_run_reports_calls_awaiting_approval(strict_model, alice):
    strict_model.call("delete_everything", {"confirm": "yes"})
    result = Assistant.get("helper").run(alice, "delete")
    assert result.status == Conversation.Status.AWAITING_APPROVAL
    assert [c.name for c in result.awaiting_approval] == ["delete_everything"]
    assert result.reply == ""
    with pytest.raises(ConversationBusy):
        Assistant.get("helper").run(alice, "again", result.conversation)


def test_stepper_lets_code_decide_each_call(strict_model, alice):
    strict_model.calls(("add", {"a": 1, "b": 2}), ("explode", {}), ("whoami", {}))
    strict_model.call("add", {"a": 3, "b": 4})
    strict_model.reply("All done.")

    stepper = Assistant.get("helper").steps(alice, "do things")
    seen = []
    for step in stepper:
        seen.append([c.name for c in step.calls])
        for call in step.calls:
            if call.name == "explode":
                step.reject(call, "too risky")
            elif call.name == "whoami":
                step.skip(call, '{"username": "someone"}')
        step.execute()

    assert seen == [["add", "explode", "whoami"], ["add"]]
    result = stepper.result
    assert result.reply == "All done."
    calls = list(ToolCall.objects.filter(conversation=result.conversation).order_by("id"))
    assert [(c.name, c.status, c.result) for c in calls] == [
        ("add", ToolCall.Status.SUCCEEDED, "3"),
        ("explode", ToolCall.Status.REJECTED, "Not run: the call was rejected: too risky."),
        ("whoami", ToolCall.Status.SUCCEEDED, '{"username": "someone"}'),
        ("add", ToolCall.Status.SUCCEEDED, "7"),
    ]
    tool_results = [m["content"] for m in strict_model.messages(1) if m["role"] == "tool"]
    assert tool_results == ["3", "Not run: the call was rejected: too risky.", '{"username": "someone"}']


def test_stepper_requires_each_step_to_be_executed_and_can_be_closed(strict_model, alice):
    strict_model.call("add", {"a": 1, "b": 2})
    stepper = Assistant.get("helper").steps(alice, "add")
    step = stepper.next()
    assert step is not None and step.message.role == "assistant"
    with pytest.raises(RuntimeError, match="Execute the previous step"):
        stepper.next()
    stepper.close()

    conversation = Conversation.objects.get(pk=stepper.conversation.pk)
    assert conversation.status == Conversation.Status.FAILED
    assert ToolCall.objects.get(conversation=conversation).status == ToolCall.Status.CANCELLED
    strict_model.reply("fresh start")
    assert Assistant.get("helper").run(alice, "again", conversation).reply == "fresh start"


def test_chat_command_one_shot(strict_model, alice):
    strict_model.call("add", {"a": 2, "b": 3})
    strict_model.reply("5")
    out = io.StringIO()
    call_command("toolcalling_chat", user="alice", assistant="helper", message="add 2 and 3", stdout=out)
    assert out.getvalue().splitlines() == ["  -> add", "  <- add: succeeded", "5"]


def test_chat_command_reads_lines_from_stdin_in_one_conversation(strict_model, alice, monkeypatch):
    strict_model.reply("Hi alice.")
    strict_model.reply("Still here.")
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n\nare you there?\n"))
    out = io.StringIO()
    call_command("toolcalling_chat", user="alice", assistant="helper", stdout=out)
    assert out.getvalue().splitlines() == ["Hi alice.", "Still here."]
    assert Conversation.objects.filter(user=alice).count() == 1
    assert [m["role"] for m in strict_model.messages(1)] == ["system", "user", "assistant", "user"]


def test_chat_command_reports_errors_clearly(strict_model, alice):
    with pytest.raises(CommandError, match="No user 'nobody'"):
        call_command("toolcalling_chat", user="nobody", assistant="helper", message="x")
    with pytest.raises(CommandError, match="No assistant named 'nope'"):
        call_command("toolcalling_chat", user="alice", assistant="nope", message="x")
    strict_model.error(500, "upstream broke")
    err = io.StringIO()
    call_command("toolcalling_chat", user="alice", assistant="helper", message="x", stderr=err, stdout=io.StringIO())
    assert "error: The model endpoint answered 500: upstream broke" in err.getvalue()
