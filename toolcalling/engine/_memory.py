"""Memory policy: which parts of the stored history the model sees, trimmed by whole turns to a budget.

A turn starts at a user message, and a user message never sits between a tool call and its result, so
dropping whole turns keeps a history the API accepts. With a budget only the tail of the stored history
that can fit is read, page by page from the newest message back, so a turn costs the same with 10 or
2,000 stored messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model_apis import HistoryMessage
from ..storage import estimate_tokens, history_items, size

if TYPE_CHECKING:
    from ..models import Conversation
    from ..toolkit import AssistantLike

FULL = "full"
FINAL = "final"
POLICIES = (FULL, FINAL)
PAGE = 100  # messages read at a time when only the tail is needed

Item = HistoryMessage


def split_turns(items: list[Item]) -> list[list[Item]]:
    """Cut the history at each user message; anything before the first user message joins the first turn."""
    turns: list[list[Item]] = []
    for item in items:
        if item.role == "user" or not turns:
            turns.append([item])
        else:
            turns[-1].append(item)
    return turns


def final_only(turn: list[Item]) -> list[Item]:
    """A past turn as the user's message and the last plain answer (no tool calls, no tool results)."""
    kept: list[Item] = [m for m in turn if m.role == "user"]
    answers = [m for m in turn if m.role == "assistant" and m.text and not m.calls]
    return kept + answers[-1:]


class History:
    """The messages a turn sends; trimmed to a budget in one pass over turn boundaries, with
    each message's estimated size worked out once (and only when a token budget asks for it)."""

    def __init__(self, items: list[Item] | None = None) -> None:
        self.items: list[Item] = list(items or [])
        self._sizes: list[int] = []

    def extend(self, items: list[Item]) -> None:
        self.items.extend(items)

    def __iadd__(self, items: list[Item]) -> History:
        self.extend(items)
        return self

    def sizes(self) -> list[int]:
        self._sizes.extend(size(item) for item in self.items[len(self._sizes) :])
        return self._sizes

    def trimmed(self, max_messages: int | None, max_tokens: int | None) -> list[Item]:
        """The longest run of whole turns from the end that fits both budgets; at least the last turn."""
        items = self.items
        if max_messages is None and max_tokens is None:
            return items
        sizes = self.sizes() if max_tokens is not None else []
        starts = [i for i, item in enumerate(items) if item.role == "user"] or [0]
        total, prefix, position = sum(sizes), 0, 0
        for start in [0, *starts[1:]]:
            prefix += sum(sizes[position:start])
            position = start
            fits_messages = max_messages is None or len(items) - start <= max_messages
            if fits_messages and (max_tokens is None or total - prefix <= max_tokens):
                return items[start:]
        return items[starts[-1] :]


def load(assistant: AssistantLike, conversation: Conversation) -> History:
    """The history this turn starts from, under the assistant's memory policy and budgets.

    The current turn (from the last user message on) is always complete. Earlier turns are sent whole
    (``"full"``) or as question and final answer (``"final"``).
    """
    policy = assistant.memory
    if policy not in POLICIES:
        raise ValueError(f"{type(assistant).__qualname__}.memory must be one of {POLICIES}, not {policy!r}.")
    max_messages, max_tokens = assistant.history_max_messages, assistant.history_max_tokens
    if max_messages is None and max_tokens is None:
        turns = split_turns([item for _, item in history_items(conversation)])
        return History([item for n, turn in enumerate(turns) for item in _policy(policy, turn, n == len(turns) - 1)])
    return History(_budgeted_tail(conversation, policy, max_messages, max_tokens))


def _policy(policy: str, turn: list[Item], is_current: bool) -> list[Item]:
    return final_only(turn) if policy == FINAL and not is_current else turn


def _budgeted_tail(
    conversation: Conversation, policy: str, max_messages: int | None, max_tokens: int | None
) -> list[Item]:
    """Read whole turns from the newest back until the next one would not fit (the newest always does)."""
    page = max(PAGE, 2 * (max_messages or 0))
    kept: list[list[Item]] = []  # newest first
    count = tokens = 0
    partial: list[Item] = []  # the oldest items read so far, of a turn that may begin further back
    before: int | None = None
    while True:
        rows = history_items(conversation, before=before, limit=page)
        exhausted = len(rows) < page
        if rows:
            before = rows[0][0]
        items = [item for _, item in rows] + partial
        if exhausted:
            turns, partial = split_turns(items), []
        else:
            first_user = next((i for i, item in enumerate(items) if item.role == "user"), len(items))
            turns, partial = split_turns(items[first_user:]), items[:first_user]
        for turn in reversed(turns):
            turn = _policy(policy, turn, is_current=not kept)
            turn_tokens = estimate_tokens(turn)
            over_messages = max_messages is not None and count + len(turn) > max_messages
            if kept and (over_messages or (max_tokens is not None and tokens + turn_tokens > max_tokens)):
                return [item for whole in reversed(kept) for item in whole]
            kept.append(turn)
            count, tokens = count + len(turn), tokens + turn_tokens
        if exhausted:
            return [item for whole in reversed(kept) for item in whole]
