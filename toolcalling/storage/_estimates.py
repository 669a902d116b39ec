"""What a history item or an answer is taken to cost in tokens when nobody counted: a token per four characters
of its JSON, and an estimate per attached file. Close enough to keep a history under a budget, and a floor for
an answer whose usage the endpoint did not report."""

from __future__ import annotations

import json
from typing import Any

from ..attachments import is_file_part, part_tokens
from ..model_apis import PROVIDER_ITEMS_KEY, ModelReply, ModelRequest, Usage, reasoning_items

Item = dict[str, Any]


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
