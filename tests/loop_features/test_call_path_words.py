"""What the call path tells the model and the site, word for word: an unknown tool's alternatives, a limit
that raises, a tool's failure under ``TOOL_ERRORS="raise"``; and what hooks and approval rules are handed."""

import pytest

from toolcalling import Assistant, ToolContext
from toolcalling.exceptions import ToolCallLimitExceeded, ToolExecutionError
from toolcalling.hooks import Hook
from toolcalling.models import ToolCall
from toolcalling.toolkit._tool import make_tool

from .assistants import HookedAssistant

SEEN: list[tuple[str, str, dict]] = []


def looked_at(ctx: ToolContext, arguments: dict) -> bool:
    """An approval rule that records what it was handed."""
    SEEN.append((ctx.user.username, ctx.tool_call.name, arguments))
    return False


def echo(text: str) -> str:
    """Say it back."""
    return text


class RuleSeer(Assistant):
    id = "lf_rule_seer"
    tools = [make_tool(echo, requires_approval=looked_at)]


class Toolless(Assistant):
    id = "lf_toolless"
    tools: list = []


def test_an_unknown_tool_is_answered_with_the_tools_there_are(strict_model, alice):
    strict_model.call("nonexistent", {})
    strict_model.reply("Sorry.")
    Assistant.get("helper").run(alice, "go")
    call = ToolCall.objects.get(name="nonexistent")
    tools = "add, delete_everything, direct_answer, explode, ship, whoami"  # list_users needs a permission
    assert call.result == f"Error: there is no tool named 'nonexistent'. Available tools: {tools}."


def test_an_assistant_without_tools_says_there_are_none(strict_model, alice):
    strict_model.call("nonexistent", {})
    strict_model.reply("Sorry.")
    Assistant.get("lf_toolless").run(alice, "go")
    call = ToolCall.objects.get(name="nonexistent")
    assert call.result == "Error: there is no tool named 'nonexistent'. Available tools: none."


@pytest.mark.toolcalling(MAX_CALLS_PER_TOOL=1, ON_LIMIT_EXCEEDED="raise")
def test_a_limit_that_raises_says_which(strict_model, alice):
    strict_model.calls(("whoami", {}), ("whoami", {}))
    with pytest.raises(ToolCallLimitExceeded) as raised:
        Assistant.get("helper").run(alice, "twice")
    assert str(raised.value) == "Tool call limit exceeded: at most 1 calls to 'whoami' per turn."


@pytest.mark.toolcalling(TOOL_ERRORS="raise")
def test_a_failed_tool_under_raise_is_named_with_its_error(strict_model, alice):
    strict_model.call("explode", {})
    with pytest.raises(ToolExecutionError) as raised:
        Assistant.get("helper").run(alice, "explode")
    assert str(raised.value) == "Tool 'explode' failed: RuntimeError: boom"


def test_an_approval_rule_gets_the_user_the_call_and_its_arguments(strict_model, alice):
    SEEN.clear()
    strict_model.call("echo", {"text": "hi"})
    strict_model.reply("Said.")
    Assistant.get("lf_rule_seer").run(alice, "echo hi")
    assert SEEN == [("alice", "echo", {"text": "hi"})]


class Answering(Hook):
    def __init__(self) -> None:
        self.handed: list = []

    def before_tool_call(self, turn, call, arguments):
        self.handed.append((turn.user.username, call.name, arguments))
        return "answered by the hook"


def test_a_hook_answering_for_the_tool_gets_the_turn_and_arguments_and_the_call_succeeds(
    strict_model, alice, monkeypatch
):
    hook = Answering()
    monkeypatch.setattr(HookedAssistant, "hooks", [hook])
    strict_model.call("add", {"a": 1, "b": 2})
    strict_model.reply("Fine.")
    Assistant.get("lf_hooked").run(alice, "add")
    assert hook.handed == [("alice", "add", {"a": 1, "b": 2})]
    call = ToolCall.objects.get(name="add")
    assert (call.status, call.result, call.error) == (ToolCall.Status.SUCCEEDED, "answered by the hook", "")
