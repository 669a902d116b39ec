"""Reading a conversation's stored history back, as the typed messages a request carries (``model_apis``).

An answer carries the items its API issued it as (``provider_items``), for the APIs that must send it back as
it was, and a failed call's result says so (``is_error``); each API sends what its wire form has room for.

The stored history is always one the OpenAI API accepts (see ``_ledger`` and ``_writes``); these read it
back with the ORM, in statements every database Django ships runs as they are (no ``IN`` of a subquery
with ``LIMIT``, which MariaDB and MySQL refuse).
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Sequence
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, router
from django.db.models import Prefetch, QuerySet

from ..attachments import AttachedFile, data_url, request_files, stub_text
from ..model_apis import (
    AssistantMessage,
    FilePart,
    HistoryMessage,
    ImagePart,
    Part,
    RequestedCall,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)
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
    if before is None and limit is None:
        return whole_history(conversation)
    messages = Message.objects.filter(conversation_id=conversation.pk)
    if before is not None:
        messages = messages.filter(id__lt=before)
    if limit is not None:
        first = messages.order_by("-id").values_list("id", flat=True)[limit - 1 : limit]
        first_id = next(iter(first), None)
        if first_id is not None:  # otherwise fewer than ``limit`` messages: all of them
            messages = messages.filter(id__gte=first_id)
    try:
        sql, params = history_sql(messages)
    except EmptyResultSet:  # a filter no row can match (Django's values_list then reads nothing too)
        return []
    return plain_rows(messages.db, sql, params)


def history_sql(messages: QuerySet[Message]) -> tuple[str, tuple[Any, ...]]:
    """The SQL and parameters of reading ``messages`` as ``HISTORY_COLUMNS`` rows, in order, on their database."""
    rows = messages.order_by("id", "tool_calls__index").values_list(*HISTORY_COLUMNS)
    sql, params = rows.query.get_compiler(using=rows.db).as_sql()
    return sql, tuple(params)


# The SQL of a whole history's read, by database alias: the same for every conversation but for its one parameter,
# the conversation's id, and building it costs more than reading a short history. A string, shared by threads.
_WHOLE_HISTORY: dict[str, str] = {}


def whole_history(conversation: Conversation) -> list[tuple[Any, ...]]:
    """``history_rows`` of every message: the read's SQL built by the ORM once per database (the one the site's
    router gives for reading messages), sent with this conversation's id as the field gives it to that database."""
    using = router.db_for_read(Message)
    field = Message._meta.get_field("conversation")
    param = field.get_db_prep_value(conversation.pk, connections[using])
    if (sql := _WHOLE_HISTORY.get(using)) is not None:
        return plain_rows(using, sql, (param,))
    built, params = history_sql(Message.objects.using(using).filter(conversation_id=conversation.pk))
    if params == (param,):  # the id is the read's only parameter (not so for an unsaved conversation's)
        _WHOLE_HISTORY[using] = built
    return plain_rows(using, built, params)


PROVIDER_ITEMS = HISTORY_COLUMNS.index("provider_items")
EMPTY_ITEMS = ("[]", None)  # the JSON of a message without items (the field's default), as the driver gives it


def plain_rows(using: str, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of a ``values_list`` of ``HISTORY_COLUMNS`` (its ``sql`` and ``params``) as the database driver of
    ``using`` gives them, with ``provider_items`` decoded (only where it holds items). Not through Django's
    per-value converters, which cost some twenty function calls a row (a JSON decode of the ``[]`` every message
    without items holds, a conversion of ``is_error``, which the reader makes a ``bool``): a turn reads its whole
    history. Every other column comes from the driver as the converters would leave it (text, whole numbers,
    ``None``)."""
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    at = PROVIDER_ITEMS
    return [(*row[:at], [] if row[at] in EMPTY_ITEMS else json.loads(row[at]), *row[at + 1 :]) for row in found]


def history_items(
    conversation: Conversation, *, before: int | None = None, limit: int | None = None
) -> list[tuple[int, HistoryMessage]]:
    """Stored messages as ``(id, message)``, oldest first: all of them, or with ``limit`` the ``limit`` newest
    before the id ``before``. Read as plain values, not model instances: a turn reads its history on every
    message, and long histories must stay cheap; the files are read only when a user message among them
    carries one."""
    items: list[tuple[int, HistoryMessage]] = []
    with_files = False
    rows = history_rows(conversation, before=before, limit=limit)
    for message_id, role, content, tool_call_id, is_error, provider_items, call_id, name, arguments, file in rows:
        with_files = with_files or file is not None
        if items and items[-1][0] == message_id:  # another call of the same assistant message, or another file
            item = items[-1][1]
            if call_id is None or item.role != "assistant" or item.calls[-1].id == call_id:
                continue
            item.calls.append(RequestedCall(id=call_id, name=name, arguments=arguments or "{}"))
        elif role == Message.Role.TOOL:
            items.append((message_id, ToolMessage(tool_call_id, content, bool(is_error))))
        elif role == Message.Role.ASSISTANT:
            calls = [] if call_id is None else [RequestedCall(id=call_id, name=name, arguments=arguments or "{}")]
            # The answer as issued, sent back by the APIs that need it.
            items.append((message_id, AssistantMessage(content or "", calls, provider_items or [])))
        elif role == Message.Role.USER:
            items.append((message_id, UserMessage(content)))
        else:
            items.append((message_id, SystemMessage(content)))
    if with_files:
        with_attachments(conversation, items)
    return items


def with_attachments(conversation: Conversation, items: list[tuple[int, HistoryMessage]]) -> None:
    """Give the user messages among ``items`` their files as parts, or a text stub for each file a request no
    longer carries (``request_files``: the newest that fit its bounds). One query, by the range of their ids from
    the first on (not an ``IN`` list, which grows with the history): it also reads the newer files, which a page
    of an older part of the history needs to know what the request carries already."""
    users = {message_id: item for message_id, item in items if item.role == "user"}
    if not users:
        return
    stored = list(
        Attachment.objects.filter(conversation_id=conversation.pk, message_id__gte=min(users)).order_by(
            "message_id", "created_at", "id"
        )
    )
    sent = request_files(stored)
    for attachment in stored:
        if attachment.message_id in users:
            users[attachment.message_id].parts.extend(parts_of([attachment], sent))


def parts_of(attachments: Iterable[Attachment], sent: Container[Any] | None = None) -> list[Part]:
    """Files as a user message's parts: an image as an ``ImagePart``, a PDF as a ``FilePart``, each with its
    bytes as a data URL; with ``sent`` (of ``request_files``) a file not in it is a ``TextPart`` naming it, and
    its file is not read."""
    parts: list[Part] = []
    for attachment in attachments:
        if sent is not None and attachment.pk not in sent:
            parts.append(TextPart(stub_text(attachment)))
            continue
        file = AttachedFile.of(attachment)
        if file.content_type.startswith("image/"):
            parts.append(ImagePart(data_url(file)))
        else:
            parts.append(FilePart(data_url(file), file.name))
    return parts


def as_history(messages: Iterable[Message]) -> list[HistoryMessage]:
    """Stored messages (model instances, an answer's calls prefetched or read) as the messages of a request."""
    out: list[HistoryMessage] = []
    for message in messages:
        if message.role == Message.Role.TOOL:
            out.append(ToolMessage(message.tool_call_id or "", message.content, message.is_error))
        elif message.role == Message.Role.ASSISTANT:
            calls = [RequestedCall(id=call.call_id, name=call.name, arguments=call.raw_arguments or "{}")
                     for call in message.tool_calls.all()]  # fmt: skip
            out.append(AssistantMessage(message.content or "", calls, message.provider_items or []))
        elif message.role == Message.Role.USER:
            files = message.attachments.all() if message.pk is not None else ()  # a message not stored has none
            out.append(UserMessage(message.content, parts_of(files)))
        else:
            out.append(SystemMessage(message.content))
    return out
