"""Hooks around the loop: their order, changing requests and results, ending a turn, and the built-in hooks."""

import json
import logging

import pytest

from toolcalling import Assistant
from toolcalling.builtin_hooks import StructuredLogging, TokenBudget
from toolcalling.hooks import EndTurn, Hook
from toolcalling.models import Conversation, ToolCall

from .assistants import HookedAssistant, Recorder


@pytest.fixture
def hooked(monkeypatch):
    def use(*hooks):
        monkeypatch.setattr(HookedAssistant, "hooks", list(hooks))
        return Assistant.get("lf_hooked")

    return use


def with_settings(settings, **values):
    settings.TOOLCALLING = {**settings.TOOLCALLING, **values}


def test_hooks_run_in_a_defined_order_settings_first_and_after_steps_reversed(strict_model, alice, hooked, settings):
    log: list[tuple[str, str]] = []
    with_settings(settings, HOOKS=[Recorder("global", log)])
    assistant = hooked(Recorder("own", log))
    strict_model.call("add", {"a": 1, "b": 2})
    strict_model.reply("3")

    assistant.run(alice, "add 1 and 2")

    assert log == [
        ("global", "on_turn_start"),
        ("own", "on_turn_start"),
        ("global", "before_model_call"),
        ("own", "before_model_call"),
        ("own", "after_model_call"),
        ("global", "after_model_call"),
        ("global", "before_tool_call:add"),
        ("own", "before_tool_call:add"),
        ("own", "after_tool_call:add"),
        ("global", "after_tool_call:add"),
        ("global", "before_model_call"),
        ("own", "before_model_call"),
        ("own", "after_model_call"),
        ("global", "after_model_call"),
        ("own", "on_turn_end"),
        ("global", "on_turn_end"),
    ]


class Rewrite(Hook):
    def before_model_call(self, turn, request):
        request.messages[0].text += " Be brief."
        request.tools = [t for t in request.tools if t["function"]["name"] == "add"]
        request.options["temperature"] = 0


@pytest.mark.chat_completions
def test_a_hook_changes_the_request_messages_tools_and_options(strict_model, alice, hooked):
    strict_model.reply("ok")
    hooked(Rewrite()).run(alice, "hi")
    sent = strict_model.requests[0]
    assert sent["messages"][0] == {"role": "system", "content": "Hooked. Be brief."}
    assert [t["function"]["name"] for t in sent["tools"]] == ["add"]
    assert sent["temperature"] == 0


class SkipExplode(Hook):
    def before_tool_call(self, turn, call, arguments):
        return "skipped by policy" if call.name == "explode" else None

    def after_tool_call(self, turn, call, result):
        return f"{result} (checked)" if call.name == "add" else None


def test_a_hook_skips_one_call_and_replaces_anothers_result(strict_model, alice, hooked):
    strict_model.calls(("explode", {}), ("add", {"a": 2, "b": 2}))
    strict_model.reply("done")
    result = hooked(SkipExplode()).run(alice, "go")

    explode, add = result.tool_calls
    assert (explode.status, explode.result) == (ToolCall.Status.SUCCEEDED, "skipped by policy")
    assert (add.status, add.result) == (ToolCall.Status.SUCCEEDED, "4 (checked)")
    tool_messages = [m for m in strict_model.messages(1) if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["skipped by policy", "4 (checked)"]


class Stop(Hook):
    def __init__(self, step):
        self.step = step

    def before_model_call(self, turn, request):
        if self.step == "model" and turn.model_calls == 1:
            raise EndTurn("Stopped before asking again.")

    def before_tool_call(self, turn, call, arguments):
        if self.step == "tool":
            raise EndTurn("Stopped before the tool ran.")


@pytest.mark.parametrize("step", ["model", "tool"])
def test_end_turn_from_a_hook_ends_with_its_message_and_keeps_the_history_valid(strict_model, alice, hooked, step):
    assistant = hooked(Stop(step))
    strict_model.calls(("add", {"a": 1, "b": 1}), ("whoami", {}))
    result = assistant.run(alice, "first")

    assert result.status == Conversation.Status.IDLE
    assert result.reply == ("Stopped before asking again." if step == "model" else "Stopped before the tool ran.")
    if step == "tool":
        stored = ToolCall.objects.filter(conversation=result.conversation)
        assert {c.status for c in stored} == {ToolCall.Status.CANCELLED}

    # The next turn sends the stored history to the strict server, which accepts it.
    HookedAssistant.hooks = []
    strict_model.reply("fine")
    assistant.run(alice, "second", result.conversation)
    roles = [m["role"] for m in strict_model.messages(-1)]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]


def test_token_budget_ends_the_turn_once_the_conversation_used_its_tokens(strict_model, alice, hooked):
    assistant = hooked(TokenBudget(max_tokens=50))
    strict_model.call("add", {"a": 1, "b": 2}, usage=(40, 20))
    first = assistant.run(alice, "add")

    assert first.conversation.total_tokens == 60
    assert first.reply.startswith("This conversation has used its token budget (60 of 50 tokens)")
    assert len(strict_model.requests) == 1  # the second model call of the turn was not made

    second = assistant.run(alice, "again", first.conversation)
    assert second.reply.startswith("This conversation has used its token budget")
    assert len(strict_model.requests) == 1


def test_token_budget_from_settings_uses_its_default(strict_model, alice, hooked, settings):
    with_settings(settings, HOOKS=["toolcalling.builtin_hooks.TokenBudget"])
    strict_model.reply("hello", usage=(10, 5))
    result = hooked().run(alice, "hi")
    assert result.reply == "hello"
    assert result.conversation.total_tokens == 15


def records(caplog):
    return [r for r in caplog.records if r.name == "toolcalling" and hasattr(r, "step")]


def test_structured_logging_logs_every_step_with_fields_and_no_payloads(strict_model, alice, hooked, caplog):
    caplog.set_level(logging.INFO, logger="toolcalling")
    strict_model.calls(("add", {"a": 20, "b": 22}), ("explode", {}))
    strict_model.reply("The sum is 42.")
    result = hooked(StructuredLogging()).run(alice, "add")

    logged = records(caplog)
    assert [r.step for r in logged] == ["turn_start", "model_call", "tool_call", "tool_call", "model_call", "turn_end"]
    assert {r.conversation for r in logged} == {str(result.conversation.pk)}
    add, explode = [r for r in logged if r.step == "tool_call"]
    assert (add.tool, add.status) == ("add", "succeeded")
    assert (explode.tool, explode.status) == ("explode", "failed")
    assert all(isinstance(r.duration, float) for r in logged if r.step in ("tool_call", "model_call"))
    assert logged[-1].status == "idle"
    for record in logged:
        assert not hasattr(record, "arguments") and not hasattr(record, "result")
        assert "42" not in record.getMessage() and "boom" not in record.getMessage()


def test_structured_logging_adds_payloads_when_log_payloads_is_on(strict_model, alice, hooked, caplog, settings):
    with_settings(settings, LOG_PAYLOADS=True)
    caplog.set_level(logging.INFO, logger="toolcalling")
    strict_model.call("add", {"a": 20, "b": 22})
    strict_model.reply("42")
    hooked(StructuredLogging()).run(alice, "add")

    (tool_record,) = [r for r in records(caplog) if r.step == "tool_call"]
    assert tool_record.arguments == {"a": 20, "b": 22}
    assert json.loads(tool_record.result) == 42
