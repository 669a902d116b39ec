"""Storage of a turn, in one place to import from: the claim and the fenced writes (``_ledger``), the writes
a turn shares with approvals (``_writes``), and reading the history back (``_history``).

Every stored history is one the OpenAI API accepts: each assistant tool call has exactly one tool message
answering it. Everything is written with the ORM, on the database the site's router gives for writes, and a
site's ``post_save`` receivers hear of every message and call (see ``_writes``).
"""

from __future__ import annotations

from ..models import Conversation, Message
from ._history import history_items, load_messages, to_openai
from ._ledger import RUNNING, Ledger, claim
from ._writes import (
    OPEN_CALL_STATUSES,
    add_message,
    answer_call_if,
    close_open_calls,
    relax_durability,
    send_post_save,
    set_status,
    update_call_if,
    write_db,
)

__all__ = [
    "CLIENT_PREFIX",
    "OPEN_CALL_STATUSES",
    "RUNNING",
    "Ledger",
    "add_message",
    "answer_call_if",
    "asked_by_client",
    "claim",
    "close_open_calls",
    "history_items",
    "load_messages",
    "relax_durability",
    "send_post_save",
    "set_status",
    "to_openai",
    "update_call_if",
    "write_db",
]

# ``Message.model`` of an assistant message whose calls a client asked for directly (an MCP client), not a model.
CLIENT_PREFIX = "client:"


def asked_by_client(conversation: Conversation) -> bool:
    """Whether the latest calls of the conversation were asked for by a client directly (no model waits for
    their results)."""
    latest = (
        Message.objects.filter(conversation_id=conversation.pk, role=Message.Role.ASSISTANT, tool_calls__isnull=False)
        .order_by("-id")
        .values_list("model", flat=True)[:1]
    )
    return any(model.startswith(CLIENT_PREFIX) for model in latest)
