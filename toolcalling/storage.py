"""Reading and writing a conversation's history, so every stored history is one the OpenAI API accepts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import F, Prefetch
from django.utils import timezone

from .client import ModelReply
from .models import Conversation, Message, ToolCall


def claim(conversation: Conversation, *, from_statuses: Iterable[str]) -> bool:
    """Move the conversation to ``running`` if it is in one of ``from_statuses``; one winner only."""
    updated = Conversation.objects.filter(pk=conversation.pk, status__in=list(from_statuses)).update(
        status=Conversation.Status.RUNNING, error="", updated_at=timezone.now()
    )
    if updated:
        conversation.status = Conversation.Status.RUNNING
        conversation.error = ""
    return bool(updated)


def set_status(conversation: Conversation, status: str, error: str = "") -> None:
    conversation.status = status
    conversation.error = error
    conversation.updated_at = timezone.now()
    conversation.save(update_fields=["status", "error", "updated_at"])


def load_messages(conversation: Conversation) -> list[Message]:
    """The stored history in order, with each assistant message's calls: two queries, whatever its length."""
    calls = Prefetch("tool_calls", queryset=ToolCall.objects.order_by("index"))
    return list(conversation.messages.order_by("id").prefetch_related(calls))


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Stored messages as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == Message.Role.TOOL:
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        elif message.role == Message.Role.ASSISTANT:
            item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            calls = list(message.tool_calls.all())
            if calls:
                item["tool_calls"] = [c.as_openai() for c in calls]
            elif item["content"] is None:
                item["content"] = ""
            out.append(item)
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def add_message(conversation: Conversation, role: str, content: str, **fields: Any) -> Message:
    return Message.objects.create(conversation=conversation, role=role, content=content, **fields)


def add_reply(conversation: Conversation, reply: ModelReply) -> tuple[Message, list[ToolCall]]:
    """Store a model answer and its requested calls, and add its tokens to the conversation's totals."""
    usage = reply.usage
    with transaction.atomic():
        message = Message.objects.create(
            conversation=conversation,
            role=Message.Role.ASSISTANT,
            content=reply.content or "",
            model=reply.model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
        )
        calls = [
            ToolCall(
                conversation=conversation,
                message=message,
                index=index,
                call_id=call.id,
                name=call.name[:64],
                raw_arguments=call.arguments,
                status=ToolCall.Status.RUNNING,
            )
            for index, call in enumerate(reply.tool_calls)
        ]
        if calls:
            calls = ToolCall.objects.bulk_create(calls)
        add_usage(conversation, usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    message._prefetched_objects_cache = {"tool_calls": calls}  # type: ignore[attr-defined]
    return message, calls


def add_usage(conversation: Conversation, prompt: int, completion: int, total: int) -> None:
    if not (prompt or completion or total):
        return
    Conversation.objects.filter(pk=conversation.pk).update(
        prompt_tokens=F("prompt_tokens") + prompt,
        completion_tokens=F("completion_tokens") + completion,
        total_tokens=F("total_tokens") + total,
    )
    conversation.prompt_tokens += prompt
    conversation.completion_tokens += completion
    conversation.total_tokens += total


def answer_call(call: ToolCall, *, status: str, result: str, error: str = "") -> Message:
    """Record a call's outcome and the tool message that tells the model, together."""
    now = timezone.now()
    call.status = status
    call.result = result
    call.error = error
    call.finished_at = now
    if call.started_at:
        call.duration_ms = max(0, int((now - call.started_at).total_seconds() * 1000))
    with transaction.atomic():
        call.save(
            update_fields=[
                "status",
                "result",
                "error",
                "finished_at",
                "duration_ms",
                "arguments",
                "extras",
                "requires_approval",
                "started_at",
            ]
        )
        return Message.objects.create(
            conversation_id=call.conversation_id,
            role=Message.Role.TOOL,
            content=result,
            tool_call_id=call.call_id,
        )


def answer_call_if(
    call: ToolCall, *, from_status: str, status: str, result: str, error: str = "", **fields: Any
) -> Message | None:
    """Answer the call only if it is still in ``from_status``; ``None`` when another process got there first.

    ``fields`` (such as ``decided_by``) are written by the same conditional update.

    The conditional ``UPDATE ... WHERE status = from_status`` is what makes a decision or a result
    count once: of two racing writers exactly one updates the row and adds the tool message.
    """
    with transaction.atomic():
        if not ToolCall.objects.filter(pk=call.pk, status=from_status).update(status=status, **fields):
            return None
        for name, value in fields.items():
            setattr(call, name, value)
        return answer_call(call, status=status, result=result, error=error)


def close_open_calls(conversation: Conversation, reason: str) -> list[Message]:
    """Answer every call still without a tool message, so the stored history stays valid after a failure."""
    answered = set(conversation.messages.filter(role=Message.Role.TOOL).values_list("tool_call_id", flat=True))
    messages = []
    open_calls = conversation.tool_calls.exclude(status=ToolCall.Status.AWAITING_APPROVAL).order_by("id")
    for call in open_calls:
        if call.call_id not in answered:
            status = call.status if call.is_final else ToolCall.Status.CANCELLED
            messages.append(answer_call(call, status=status, result=f"Not run: {reason}", error=reason))
    return messages
