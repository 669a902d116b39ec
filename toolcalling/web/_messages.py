"""Messages as every edge reads and shows them: a conversation's history with its calls and files, and the JSON of
a turn's new messages, as ``MessageSerializer`` gives it, without building a serializer per request.

A ``ModelSerializer`` builds its fields from the model for every new instance, nested ones included: about a
quarter of a turn's POST in CPU. The answer of a POST is shown by one serializer built once per process, whose
fields (bound once, then only read) format every message; it has no request, as the POST's messages never had.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from django.db.models import Prefetch, QuerySet

from ..models import Conversation, Message, ToolCall
from ._serializers import MessageSerializer


def messages_queryset(conversation: Conversation) -> QuerySet[Message]:
    """The conversation's messages in order, each with its tool calls (in the answer's order) and its files."""
    return conversation.messages.order_by("id").prefetch_related(
        Prefetch("tool_calls", queryset=ToolCall.objects.order_by("index")), "attachments"
    )


@functools.cache
def message_serializer() -> MessageSerializer:
    """The serializer with its fields and its calls' fields built, before any thread reads them."""
    serializer = MessageSerializer()
    tool_calls = serializer.fields["tool_calls"]
    assert tool_calls.child is not None  # type: ignore[attr-defined]  # a nested many=True serializer
    _ = tool_calls.child.fields  # type: ignore[attr-defined]
    attachments = serializer.fields["attachments"]
    assert attachments.child is not None  # type: ignore[attr-defined]
    _ = attachments.child.fields  # type: ignore[attr-defined]
    return serializer


def messages_json(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """``MessageSerializer(messages, many=True).data``, without a request."""
    serializer = message_serializer()
    return [serializer.to_representation(message) for message in messages]
