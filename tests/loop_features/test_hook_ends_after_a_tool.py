"""A hook that ends the turn once a tool has run: that call may have taken effect, so it is never told "not
run"; the calls after it never started, so they are."""

import pytest

from toolcalling import Assistant
from toolcalling.hooks import EndTurn, Hook
from toolcalling.models import Conversation, ToolCall

from .assistants import HookedAssistant


class EndAfterTool(Hook):
    def after_tool_call(self, turn, call, result):
        raise EndTurn("Stopped after the tool ran.")


@pytest.fixture
def assistant(monkeypatch):
    monkeypatch.setattr(HookedAssistant, "hooks", [EndAfterTool()])
    return Assistant.get("lf_hooked")


def test_the_call_whose_tool_ran_may_have_run_and_the_next_one_did_not(strict_model, alice, assistant):
    strict_model.calls(("add", {"a": 1, "b": 1}), ("whoami", {}))
    result = assistant.run(alice, "first")

    assert result.status == Conversation.Status.IDLE
    assert result.reply == "Stopped after the tool ran."
    ran, after = ToolCall.objects.filter(conversation=result.conversation).order_by("index")
    assert (ran.name, ran.status) == ("add", ToolCall.Status.FAILED)
    assert "The tool may have run" in ran.result
    assert (after.name, after.status) == ("whoami", ToolCall.Status.CANCELLED)
    assert after.result.startswith("Not run: ")
