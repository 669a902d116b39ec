"""Reading and writing a conversation's history, so every stored history is one the OpenAI API accepts."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import F, Prefetch, Q
from django.utils import timezone

from .client import ModelReply
from .models import Conversation, Message, ToolCall


def claim(conversation: Conversation, *, from_statuses: Iterable[str], stale_after: float | None = None) -> bool:
    """Move the conversation to ``running`` if it is in one of ``from_statuses``; one winner only.

    With ``stale_after`` (seconds), a turn that has been ``running`` without any progress for that
    long (its process died) may be taken over too.
    """
    condition = Q(status__in=list(from_statuses))
    if stale_after is not None:
        cutoff = timezone.now() - datetime.timedelta(seconds=stale_after)
        condition |= Q(status=Conversation.Status.RUNNING, updated_at__lt=cutoff)
    updated = Conversation.objects.filter(condition, pk=conversation.pk).update(
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
    return _without_calls(Message.objects.create(conversation=conversation, role=role, content=content, **fields))


def _without_calls(message: Message) -> Message:
    """Mark a new message as having no tool calls, so reading them later costs no query."""
    message._prefetched_objects_cache = {"tool_calls": ToolCall.objects.none()}  # type: ignore[attr-defined]
    return message


def add_reply(conversation: Conversation, reply: ModelReply, *, data: Any = None) -> tuple[Message, list[ToolCall]]:
    """Store a model answer and its requested calls, and add its tokens to the conversation's totals.

    ``data`` is the structured output parsed from the answer, when the turn asked for one."""
    usage = reply.usage
    with transaction.atomic():
        message = Message.objects.create(
            conversation=conversation,
            role=Message.Role.ASSISTANT,
            content=reply.content or "",
            data=data,
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
        updated_at=timezone.now(),  # also the running turn's heartbeat, see claim()
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
        # At most the column's maximum on PostgreSQL and MySQL (2**31 - 1 ms, about 24.8 days): a run the sweep
        # fails long after its worker died is still recorded instead of failing the sweep on every pass.
        call.duration_ms = min(2**31 - 1, max(0, int((now - call.started_at).total_seconds() * 1000)))
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
        message = Message.objects.create(
            conversation_id=call.conversation_id,
            role=Message.Role.TOOL,
            content=result,
            tool_call_id=call.call_id,
        )
    return _without_calls(message)


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
    """Answer every call that was started but never answered, so the stored history stays valid.

    A call gets its final status and its tool message together (``answer_call``), so the open
    calls are exactly those still ``running`` or ``approved``; waiting ones keep waiting.
    """
    open_calls = conversation.tool_calls.filter(
        status__in=[ToolCall.Status.RUNNING, ToolCall.Status.APPROVED]
    ).order_by("message_id", "index")
    return [
        answer_call(call, status=ToolCall.Status.CANCELLED, result=f"Not run: {reason}", error=reason)
        for call in open_calls
    ]
