"""What a history item or an answer is taken to cost in tokens when nobody counted: a token per four characters
of its JSON, and an estimate per attached file. Close enough to keep a history under a budget, and a floor for
an answer whose usage the endpoint did not report."""

from __future__ import annotations

import json
from typing import Any

from ..attachments import IMAGE_TOKENS, document_tokens
from ..model_apis import (
    AssistantMessage,
    FilePart,
    HistoryMessage,
    ImagePart,
    ModelReply,
    ModelRequest,
    TextPart,
    ToolMessage,
    Usage,
    UserMessage,
    reasoning_items,
)

# The characters a message's JSON adds around its text (``{"role": "user", "content": ""}``), and each call
# around its id, name and arguments, so that many short messages cost what they do.
MESSAGE_FRAME = 32
CALL_FRAME = 64


def size(message: HistoryMessage) -> int:
    """A rough token count: the characters of its JSON / 4, and for each attached file an estimate rather than
    its base64. Close enough to keep a history under a budget. Of an answer's provider items only the reasoning
    counts: the rest is its text and calls again."""
    texts: list[Any] = [message.call_id, message.text] if isinstance(message, ToolMessage) else [message.text]
    frame, files = MESSAGE_FRAME, 0
    if isinstance(message, UserMessage):
        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ImagePart):
                files += IMAGE_TOKENS
            elif isinstance(part, FilePart):
                files += document_tokens(len(part.data_url))
    elif isinstance(message, AssistantMessage):
        texts.extend((call.id, call.name, call.arguments) for call in message.calls)
        texts.append(reasoning_items(message.provider_items))
        frame += CALL_FRAME * len(message.calls)
    return (len(json.dumps(texts, ensure_ascii=False)) + frame) // 4 + files


def estimate_tokens(messages: list[HistoryMessage]) -> int:
    return sum(size(message) for message in messages)


def estimated_usage(reply: ModelReply, request: ModelRequest) -> Usage:
    """What an answer whose usage is unknown is taken to have used: its request (the messages and the offered
    tools) and what it wrote, a token per four characters of their JSON, as history budgets count. Reasoning the
    endpoint did not report is not in it: a floor, not a bound."""
    prompt = estimate_tokens(request.messages) + len(json.dumps(request.tools, ensure_ascii=False)) // 4
    written = (reply.content or "") + "".join(call.arguments for call in reply.tool_calls)
    completion = len(written) // 4 + 1
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
