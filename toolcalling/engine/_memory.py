"""Memory policy: which parts of the stored history the model sees, trimmed by whole turns to a budget.

A turn starts at a user message, and a user message never sits between a tool call and its result, so
dropping whole turns keeps a history the API accepts. With a budget only the tail of the stored history
that can fit is read, page by page from the newest message back, so a turn costs the same with 10 or
2,000 stored messages.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..attachments import is_file_part, part_tokens
from ..model_apis import PROVIDER_ITEMS_KEY, ModelReply, ModelRequest, Usage, reasoning_items
from ._history import history_items

if TYPE_CHECKING:
    from ..models import Conversation
    from ..toolkit import AssistantLike

FULL = "full"
FINAL = "final"
POLICIES = (FULL, FINAL)
PAGE = 100  # messages read at a time when only the tail is needed

Item = dict[str, Any]


def split_turns(items: list[Item]) -> list[list[Item]]:
    """Cut the history at each user message; anything before the first user message joins the first turn."""
    turns: list[list[Item]] = []
    for item in items:
        if item["role"] == "user" or not turns:
            turns.append([item])
        else:
            turns[-1].append(item)
    return turns


def final_only(turn: list[Item]) -> list[Item]:
    """A past turn as the user's message and the last plain answer (no tool calls, no tool results)."""
    kept = [m for m in turn if m["role"] == "user"]
    answers = [m for m in turn if m["role"] == "assistant" and m.get("content") and not m.get("tool_calls")]
    return kept + answers[-1:]


def size(item: Item) -> int:
    """A rough token count (JSON characters / 4, and an estimate per attached file rather than its base64):
    close enough to keep a history under a budget. Of an answer's provider items only the reasoning counts: the
    rest is its text and calls again."""
    if PROVIDER_ITEMS_KEY in item:
        item = {**item, PROVIDER_ITEMS_KEY: reasoning_items(item[PROVIDER_ITEMS_KEY])}
    content = item.get("content")
    if isinstance(content, list) and any(is_file_part(part) for part in content):
        text = {**item, "content": [part for part in content if not is_file_part(part)]}
        return len(json.dumps(text, ensure_ascii=False)) // 4 + sum(part_tokens(part) for part in content)
    return len(json.dumps(item, ensure_ascii=False)) // 4


def estimate_tokens(items: list[Item]) -> int:
    return sum(size(item) for item in items)


def estimated_usage(reply: ModelReply, request: ModelRequest) -> Usage:
    """What an answer whose usage is unknown is taken to have used: its request (the messages and the offered
    tools) and what it wrote, a token per four characters of their JSON, as history budgets count. Reasoning the
    endpoint did not report is not in it: a floor, not a bound."""
    prompt = estimate_tokens(request.messages) + len(json.dumps(request.tools, ensure_ascii=False)) // 4
    written = (reply.content or "") + "".join(call.arguments for call in reply.tool_calls)
    completion = len(written) // 4 + 1
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


class History:
    """The Chat Completions messages a turn sends; trimmed to a budget in one pass over turn boundaries, with
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
        starts = [i for i, item in enumerate(items) if item["role"] == "user"] or [0]
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
            first_user = next((i for i, item in enumerate(items) if item["role"] == "user"), len(items))
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
