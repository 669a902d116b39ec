"""Memory policy: which parts of the stored history the model sees, trimmed by whole turns to a budget."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .storage import to_openai

if TYPE_CHECKING:
    from .assistant import Assistant
    from .models import Message

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
    """The Chat Completions messages for this turn under the assistant's memory policy and budget.

    The current turn (from the last user message on) is always sent complete. Earlier turns are sent
    whole (``"full"``) or as question and final answer (``"final"``), and the oldest are dropped first
    while the history is over ``history_max_messages`` or ``history_max_tokens``. Dropping whole turns
    never separates a tool call from its result, so the history stays one the API accepts.
    """
    policy = assistant.memory
    if policy not in POLICIES:
        raise ValueError(f"{type(assistant).__qualname__}.memory must be one of {POLICIES}, not {policy!r}.")
    turns = split_turns(messages)
    if not turns:
        return []
    current = to_openai(turns[-1])
    earlier = [to_openai(final_only(t) if policy == FINAL else t) for t in turns[:-1]]
    max_messages = assistant.history_max_messages
    max_tokens = assistant.history_max_tokens

    def over(parts: list[list[dict[str, Any]]]) -> bool:
        flat = [item for part in parts for item in part] + current
        if max_messages is not None and len(flat) > max_messages:
            return True
        return max_tokens is not None and estimate_tokens(flat) > max_tokens

    while earlier and over(earlier):
        earlier.pop(0)
    return [item for part in earlier for item in part] + current
