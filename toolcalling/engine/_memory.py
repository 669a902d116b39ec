"""Memory policy: which parts of the stored history the model sees, trimmed by whole turns to a budget."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._storage import to_openai

if TYPE_CHECKING:
    from ..assistant import Assistant
    from ..models import Message

FULL = "full"
FINAL = "final"
POLICIES = (FULL, FINAL)


def split_turns(messages: list[Message]) -> list[list[Message]]:
    """Cut the history at each user message; anything before the first user message joins the first turn."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def final_only(turn: list[Message]) -> list[Message]:
    """A past turn as the user's message and the last plain answer (no tool calls, no tool results)."""
    kept = [m for m in turn if m.role == "user"]
    answers = [m for m in turn if m.role == "assistant" and m.content and not m.tool_calls.all()]
    return kept + answers[-1:]


def estimate_tokens(items: list[dict[str, Any]]) -> int:
    """A rough count (JSON characters / 4): close enough to keep a history under a budget."""
    return sum(len(json.dumps(item, ensure_ascii=False)) for item in items) // 4


def build_history(assistant: Assistant, messages: list[Message]) -> list[dict[str, Any]]:
    """The Chat Completions messages for this turn under the assistant's memory policy.

    The current turn (from the last user message on) is always complete. Earlier turns are sent whole
    (``"full"``) or as question and final answer (``"final"``).
    """
    policy = assistant.memory
    if policy not in POLICIES:
        raise ValueError(f"{type(assistant).__qualname__}.memory must be one of {POLICIES}, not {policy!r}.")
    turns = split_turns(messages)
    out: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        is_current = index == len(turns) - 1
        out += to_openai(final_only(turn) if policy == FINAL and not is_current else turn)
    return out


def trim(assistant: Assistant, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop the oldest turns while the history is over ``history_max_messages`` or ``history_max_tokens``.

    Applied before every model call. A turn starts at a user message, and a user message never sits
    between a tool call and its result, so dropping whole turns keeps a history the API accepts. The
    last turn is always kept, even when it alone is over the budget.
    """
    max_messages = assistant.history_max_messages
    max_tokens = assistant.history_max_tokens
    if max_messages is None and max_tokens is None:
        return history
    starts = [i for i, item in enumerate(history) if item["role"] == "user"] or [0]
    for start in [0, *starts[1:]]:
        kept = history[start:]
        too_many = max_messages is not None and len(kept) > max_messages
        if not (too_many or (max_tokens is not None and estimate_tokens(kept) > max_tokens)):
            return kept
    return history[starts[-1] :]
