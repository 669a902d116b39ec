"""``Turn.iter()``, the one loop: the values its steps yield say how each step went and how the turn ends."""

from toolcalling import Assistant
from toolcalling.engine import Turn, conversation_for
from toolcalling.engine._turn import CallsHandled, Ended, Replied
from toolcalling.models import Conversation


def shape(steps):
    """Each step as ``(kind, what it says)``."""
    out = []
    for step in steps:
        if isinstance(step, Replied):
            out.append(("answered", [c.name for c in step.calls]))
        elif isinstance(step, CallsHandled):
            out.append(("calls answered", step.ending))
        else:
            assert isinstance(step, Ended)
            out.append(("ended", step.status, step.stopped))
    return out


def test_a_turn_yields_each_answer_its_calls_and_its_end(model, alice):
    model.calls(("add", {"a": 2, "b": 3}))
    model.reply("5")
    assistant = Assistant.get("helper")
    conversation = conversation_for(assistant, alice, None)
    turn = Turn(assistant, conversation, user=alice)
    steps = list(turn.iter("What is 2 + 3?"))
    assert shape(steps) == [
        ("answered", ["add"]),
        ("calls answered", None),  # the model is asked again
        ("answered", []),
        ("ended", "idle", False),
    ]
    assert steps[1].calls[0].result == "5" and steps[2].message.content == "5"
    assert [m.role for m in turn.new_messages] == ["user", "assistant", "tool", "assistant"]
    conversation.refresh_from_db()
    assert conversation.status == "idle" and conversation.origin == Conversation.Origin.CODE


def test_a_call_that_waits_ends_the_turn_awaiting_approval(model, alice):
    model.calls(("delete_everything", {"confirm": "yes"}))
    assistant = Assistant.get("helper")
    turn = Turn(assistant, conversation_for(assistant, alice, None), user=alice)
    assert shape(turn.iter("Delete it all.")) == [
        ("answered", ["delete_everything"]),
        ("calls answered", "awaiting_approval"),
        ("ended", "awaiting_approval", False),
    ]
    assert len(model.requests) == 1  # nobody asks the model while the call waits


def test_letting_go_of_a_running_turn_fails_it_with_its_calls_answered(model, alice):
    model.calls(("add", {"a": 1, "b": 1}))
    assistant = Assistant.get("helper")
    conversation = conversation_for(assistant, alice, None)
    steps = Turn(assistant, conversation, user=alice).iter("1 + 1?")
    first = next(steps)
    assert isinstance(first, Replied) and first.calls[0].status == "running"
    steps.close()  # the consumer goes away before the calls run
    conversation.refresh_from_db()
    assert conversation.status == "failed" and "stopped by its caller" in conversation.error
    first.calls[0].refresh_from_db()
    assert first.calls[0].status == "cancelled"  # never run, and answered so the history stays valid
