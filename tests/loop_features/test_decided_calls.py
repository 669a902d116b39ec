"""Calls the code decided (the stepper's ``skip`` and ``reject``) and failed calls under ``TOOL_ERRORS="raise"``:
what is stored for them, what they count, and what is announced."""

import pytest

from toolcalling import Assistant, signals
from toolcalling.exceptions import ToolExecutionError
from toolcalling.models import ToolCall


def test_a_skipped_call_is_a_success_and_a_rejected_one_stores_why(strict_model, alice):
    strict_model.calls(("whoami", {}), ("explode", {}))
    strict_model.reply("Done.")
    stepper = Assistant.get("helper").steps(alice, "go")
    for step in stepper:
        skipped, rejected = step.calls
        step.skip(skipped, '{"username": "someone"}')
        step.reject(rejected, "not today")
        step.execute()

    calls = ToolCall.objects.filter(conversation=stepper.result.conversation).order_by("index")
    assert [(c.status, c.error) for c in calls] == [
        (ToolCall.Status.SUCCEEDED, ""),
        (ToolCall.Status.REJECTED, "Not run: the call was rejected: not today."),
    ]


@pytest.mark.toolcalling(MAX_CALLS_PER_TOOL=1)
def test_a_skipped_call_counts_towards_the_tools_limit(strict_model, alice):
    strict_model.call("whoami", {})
    strict_model.call("whoami", {})
    strict_model.reply("I may not ask again.")
    stepper = Assistant.get("helper").steps(alice, "who?")
    first = True
    for step in stepper:
        if first:
            step.skip(step.calls[0], '{"username": "someone"}')
            first = False
        step.execute()

    second = ToolCall.objects.filter(conversation=stepper.result.conversation).order_by("id").last()
    assert (second.status, second.error) == (
        ToolCall.Status.FAILED,
        "not run, the limit is at most 1 calls to 'whoami' per turn",
    )


@pytest.mark.toolcalling(TOOL_ERRORS="raise")
def test_a_failed_call_that_ends_the_turn_is_still_announced(strict_model, alice):
    seen = []

    def receiver(sender, tool_call, **kwargs):
        seen.append((tool_call.name, tool_call.status))

    strict_model.call("explode", {})
    signals.tool_call_finished.connect(receiver)
    try:
        with pytest.raises(ToolExecutionError, match="boom"):
            Assistant.get("helper").run(alice, "explode")
    finally:
        signals.tool_call_finished.disconnect(receiver)
    assert seen == [("explode", ToolCall.Status.FAILED)]
