"""Reading a conversation's stored history, and turning stored messages into Chat Completions messages.

An assistant message also carries its answer as the model API issued it (``PROVIDER_ITEMS_KEY``), for the
APIs that must send it back as it was, and a failed call's tool message says so (``IS_ERROR_KEY``); the APIs
without such things leave those keys out.

The stored history is always one the OpenAI API accepts (see ``_ledger`` and ``_writes``); these read it
back with the ORM, in statements every database Django ships runs as they are (no ``IN`` of a subquery
with ``LIMIT``, which MariaDB and MySQL refuse).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Prefetch

from ..attachments import request_files, with_parts
from ..model_apis import IS_ERROR_KEY, PROVIDER_ITEMS_KEY
from ..models import Attachment, Conversation, Message, ToolCall

# What one row of a history read holds: the message, one of its calls (all None when it has none), and whether it
# carries a file (the size of one of its attachments, None when it has none: a column read as it is, on every
# database, where an id would be converted on some). Only assistant messages have calls and only user messages
# files, so the joins add no rows to each other's.
HISTORY_COLUMNS = (
    "id",
    "role",
    "content",
    "tool_call_id",
    "is_error",
    "provider_items",
    "tool_calls__call_id",
    "tool_calls__name",
    "tool_calls__raw_arguments",
    "attachments__size",
)


def load_messages(conversation: Conversation) -> list[Message]:
    """The stored history in order, with each assistant message's calls: two queries, whatever its length."""
    calls = Prefetch("tool_calls", queryset=ToolCall.objects.order_by("index"))
    return list(conversation.messages.order_by("id").prefetch_related(calls))


def history_rows(
    conversation: Conversation, *, before: int | None = None, limit: int | None = None
) -> list[tuple[Any, ...]]:
    """A conversation's messages with their calls (``HISTORY_COLUMNS``), one row per message and call, oldest
    first; with ``limit``, the ``limit`` newest messages before the id ``before``.

    A tail takes two statements: the id of its oldest message, then the messages from there on with their
    calls joined. Its rows stop at the tail, however long the history."""
    messages = Message.objects.filter(conversation_id=conversation.pk)
    if before is not None:
        messages = messages.filter(id__lt=before)
    if limit is not None:
        first = messages.order_by("-id").values_list("id", flat=True)[limit - 1 : limit]
        first_id = next(iter(first), None)
        if first_id is not None:  # otherwise fewer than ``limit`` messages: all of them
            messages = messages.filter(id__gte=first_id)
    return list(messages.order_by("id", "tool_calls__index").values_list(*HISTORY_COLUMNS))


def history_items(
    conversation: Conversation, *, before: int | None = None, limit: int | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """Stored messages as ``(id, Chat Completions message)``, oldest first: all of them, or with ``limit`` the
    ``limit`` newest before the id ``before``. Read as plain values, not model instances: a turn reads its
    history on every message, and long histories must stay cheap; the files are read only when a user message
    among them carries one."""
    items: list[tuple[int, dict[str, Any]]] = []
    with_files = False
    rows = history_rows(conversation, before=before, limit=limit)
    for message_id, role, content, tool_call_id, is_error, provider_items, call_id, name, arguments, file in rows:
        with_files = with_files or file is not None
        if items and items[-1][0] == message_id:  # another call of the same assistant message, or another file
            item = items[-1][1]
            if call_id is None or item["tool_calls"][-1]["id"] == call_id:
                continue
        elif role == Message.Role.TOOL:
            item = {"role": "tool", "tool_call_id": tool_call_id, "content": content}
            if is_error:
                item[IS_ERROR_KEY] = True
            items.append((message_id, item))
        elif role == Message.Role.ASSISTANT:
            item = {"role": "assistant", "content": content or None}
            if provider_items:  # the answer as issued, sent back by the APIs that need it
                item[PROVIDER_ITEMS_KEY] = provider_items
            items.append((message_id, item))
        else:
            item = {"role": role, "content": content}
            items.append((message_id, item))
        if call_id is not None:
            call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments or "{}"}}
            item.setdefault("tool_calls", []).append(call)
        elif role == Message.Role.ASSISTANT and item["content"] is None:
            item["content"] = ""
    if with_files:
        with_attachments(conversation, items)
    return items


def with_attachments(conversation: Conversation, items: list[tuple[int, dict[str, Any]]]) -> None:
    """Give the user messages among ``items`` their files as content parts, or a text stub for each file a
    request no longer carries (``request_files``: the newest that fit its bounds). One query, by the range of
    their ids from the first on (not an ``IN`` list, which grows with the history): it also reads the newer
    files, which a page of an older part of the history needs to know what the request carries already."""
    users = {message_id: item for message_id, item in items if item["role"] == Message.Role.USER}
    if not users:
        return
    stored = list(
        Attachment.objects.filter(conversation_id=conversation.pk, message_id__gte=min(users)).order_by(
            "message_id", "created_at", "id"
        )
    )
    sent = request_files(stored)
    files: dict[int, list[Attachment]] = {}
    for attachment in stored:
        if attachment.message_id in users:
            files.setdefault(attachment.message_id, []).append(attachment)
    for message_id, carried in files.items():
        users[message_id]["content"] = with_parts(users[message_id]["content"], carried, sent=sent)


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Stored messages as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == Message.Role.TOOL:
            tool: dict[str, Any] = {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            if message.is_error:
                tool[IS_ERROR_KEY] = True
            out.append(tool)
        elif message.role == Message.Role.ASSISTANT:
            item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.provider_items:
                item[PROVIDER_ITEMS_KEY] = message.provider_items
            calls = list(message.tool_calls.all())
            if calls:
                item["tool_calls"] = [c.as_openai() for c in calls]
            elif item["content"] is None:
                item["content"] = ""
            out.append(item)
        elif message.role == Message.Role.USER:
            files = message.attachments.all() if message.pk is not None else ()  # a message not stored has none
            out.append({"role": "user", "content": with_parts(message.content, files)})
        else:
            out.append({"role": message.role, "content": message.content})
    return out
