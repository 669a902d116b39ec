"""Storage: the layer below the engine and approval. A turn's fenced writes (``Ledger``), the claim and the
conditional writes a turn shares with approvals and evals (answering a call only if it is still open, setting a
status only from the statuses given, retried on deadlocks), reading the history back, and what an item is
taken to cost in tokens when nobody counted.

Every stored history is one the OpenAI API accepts: each assistant tool call has exactly one tool message
answering it. Everything is written with the ORM, on the database the site's router gives for writes, and a
site's ``post_save`` receivers hear of every message and call (see ``_writes``).
"""

from __future__ import annotations

from ._built import get_as_built
from ._estimates import estimate_tokens, estimated_usage, size
from ._history import as_history, history_items, load_messages
from ._ledger import Ledger
from ._writes import (
    OPEN_CALL_STATUSES,
    RUNNING,
    add_message,
    answer_call_if,
    claim,
    claim_new,
    close_open_calls,
    relax_durability,
    send_post_save,
    set_status,
    update_call_if,
    with_retries,
    write_db,
)

__all__ = [
    "as_history",
    "get_as_built",
    "OPEN_CALL_STATUSES",
    "RUNNING",
    "Ledger",
    "add_message",
    "answer_call_if",
    "claim",
    "claim_new",
    "close_open_calls",
    "estimate_tokens",
    "estimated_usage",
    "history_items",
    "load_messages",
    "relax_durability",
    "send_post_save",
    "set_status",
    "size",
    "update_call_if",
    "with_retries",
    "write_db",
]
