"""A stored conversation as a replay fixture (``toolcalling.testing.ReplayModel``): for each answer the model
gave, the request's shape (the tools offered, the history before it) and the reply (text, calls, tokens).

The tools are the assistant's as they are now, for the conversation's user: record right after a run whose
tools you want to keep. The history is the whole stored one (``memory = "full"``); an assistant that trims
its history or searches its tools sends other requests, and its replays fail."""

from __future__ import annotations

import json
from typing import Any

from ..engine import tool_definitions
from ..models import Conversation, Message, ToolCall
from ..testing.replay import FORMAT, message_shape, tool_shape
from ..toolkit import assistants


def _chat_message(message: Message, calls: list[ToolCall]) -> dict[str, Any]:
    if message.role == Message.Role.TOOL:
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    item: dict[str, Any] = {"role": message.role, "content": message.content}
    if calls:
        item["tool_calls"] = [call.as_openai() for call in calls]
    return item


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return raw


def record(conversation: Conversation) -> dict[str, Any]:
    """The replay fixture of ``conversation`` as JSON-ready data."""
    assistant = assistants.get(conversation.assistant_id)()
    user = conversation.user
    tools = [tool_shape(d) for d in tool_definitions(assistant, assistant.get_tools(assistant.build_context(user)))]
    messages = list(conversation.messages.order_by("id").prefetch_related("tool_calls"))
    history: list[dict[str, Any]] = []
    exchanges = []
    for message in messages:
        calls = sorted(message.tool_calls.all(), key=lambda c: c.index)
        if message.role == Message.Role.ASSISTANT and message.model:  # an answer the model gave (not return-direct)
            exchanges.append(
                {
                    "request": {"tools": tools, "messages": [message_shape(m) for m in history]},
                    "reply": {
                        "content": message.content or None,
                        "tool_calls": [
                            {"id": c.call_id, "name": c.name, "arguments": _arguments(c.raw_arguments)} for c in calls
                        ],  # fmt: skip
                        "usage": {
                            "prompt_tokens": message.prompt_tokens,
                            "completion_tokens": message.completion_tokens,
                        },  # fmt: skip
                    },
                }
            )
        if message.role != Message.Role.SYSTEM:
            history.append(_chat_message(message, calls))
    models = [m.model for m in messages if m.role == Message.Role.ASSISTANT and m.model]
    return {
        "format": FORMAT,
        "conversation": str(conversation.pk),
        "assistant": conversation.assistant_id,
        "user": user.get_username() if user is not None else None,
        "model": models[-1] if models else None,
        "user_messages": [m.content for m in messages if m.role == Message.Role.USER],
        "exchanges": exchanges,
    }
