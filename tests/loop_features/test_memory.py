"""Memory policy: full or final earlier turns, and budgets that drop whole turns, accepted by the strict server."""

from toolcalling import Assistant


def two_earlier_turns(model, user, assistant_id):
    """Turn 1 uses a tool, turn 2 answers plainly; returns the conversation."""
    model.call("add", {"a": 1, "b": 2})
    model.reply("a1: it is 3")
    model.reply("a2: hello")
    assistant = Assistant.get(assistant_id)
    first = assistant.run(user, "q1 " + "x" * 400)
    assistant.run(user, "q2", first.conversation)
    return first.conversation


def sent(model, index=-1):
    return [(m["role"], m.get("content")) for m in model.messages(index)[1:]]


def test_full_memory_sends_earlier_turns_with_their_tool_calls(strict_model, alice):
    conversation = two_earlier_turns(strict_model, alice, "helper")
    strict_model.reply("a3")
    Assistant.get("helper").run(alice, "q3", conversation)
    assert [role for role, _ in sent(strict_model)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
    ]


def test_final_memory_sends_earlier_turns_as_question_and_answer_but_this_turn_complete(strict_model, alice):
    conversation = two_earlier_turns(strict_model, alice, "lf_final")
    strict_model.call("add", {"a": 5, "b": 5})
    strict_model.reply("a3: 10")
    Assistant.get("lf_final").run(alice, "q3", conversation)

    # First request of turn 3: earlier turns reduced to question and final answer.
    assert sent(strict_model, -2) == [
        ("user", "q1 " + "x" * 400),
        ("assistant", "a1: it is 3"),
        ("user", "q2"),
        ("assistant", "a2: hello"),
        ("user", "q3"),
    ]
    # Second request of turn 3: its own tool call and result are there.
    roles = [role for role, _ in sent(strict_model, -1)]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "tool"]
    # The stored history is untouched: everything is still in the database.
    assert conversation.messages.count() == 10


def test_message_budget_drops_the_oldest_whole_turn(strict_model, alice):
    conversation = two_earlier_turns(strict_model, alice, "lf_budget")  # history_max_messages = 6
    strict_model.reply("a3")
    Assistant.get("lf_budget").run(alice, "q3", conversation)
    # Turn 1 (4 messages) would make 7; it goes whole, with its tool call and result together.
    assert sent(strict_model) == [("user", "q2"), ("assistant", "a2: hello"), ("user", "q3")]


def test_token_budget_drops_the_long_old_turn(strict_model, alice):
    conversation = two_earlier_turns(strict_model, alice, "lf_token_budget")  # history_max_tokens = 120
    strict_model.reply("a3")
    Assistant.get("lf_token_budget").run(alice, "q3", conversation)
    assert sent(strict_model) == [("user", "q2"), ("assistant", "a2: hello"), ("user", "q3")]


def test_the_current_turn_is_kept_complete_even_over_the_budget(strict_model, alice):
    conversation = two_earlier_turns(strict_model, alice, "lf_budget")
    for n in range(3):
        strict_model.call("add", {"a": n, "b": 1})
    strict_model.reply("done")
    Assistant.get("lf_budget").run(alice, "q3", conversation)
    # 7 messages in this turn alone: every earlier turn is dropped, nothing of this turn is.
    roles = [role for role, _ in sent(strict_model)]
    assert roles == ["user"] + ["assistant", "tool"] * 3
