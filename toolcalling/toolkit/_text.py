"""Making what a model sent usable: text any database keeps (and JSON can encode), and call ids that pair safely."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

# Lone UTF-16 surrogates (JSON allows "\ud800") cannot be encoded as UTF-8, and PostgreSQL refuses NUL in
# text and in jsonb: both become U+FFFD, the replacement character, instead of failing the write.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"

# How deeply JSON from outside (a model's arguments, an MCP client's, an approver's edit) may nest: far more
# than any tool's schema needs, and within what every database's JSON column and Python's recursion take.
MAX_JSON_DEPTH = 32

MAX_CALL_ID = 64
_CALL_ID = re.compile(r"^[A-Za-z0-9_.:-]+$")


def storable(text: str | None) -> str:
    """``text`` as every database can store it."""
    if not text:
        return ""
    return _UNSTORABLE.sub(REPLACEMENT, text)


def storable_json(value: Any) -> Any:
    """A JSON value whose strings (keys included) are all storable."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


def nested_too_deeply(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a parsed JSON value nests objects and arrays more than ``limit`` levels deep (no recursion)."""
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else None
        if children is None:
            continue
        if depth > limit:
            return True
        level.extend((child, depth + 1) for child in children)
    return False


def unique_call_ids(requested: Iterable[str | None], taken: Iterable[str]) -> list[str]:
    """The ids to store for one answer's calls: the model's own where usable, else new ones.

    A missing, overlong or odd id, or one the conversation (or this answer) already used, is replaced by
    ``call_<random>``: the history sent back then pairs every call with exactly one answer.
    """
    used = set(taken)
    ids = []
    for call_id in requested:
        if not call_id or len(call_id) > MAX_CALL_ID or not _CALL_ID.match(call_id) or call_id in used:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        used.add(call_id)
        ids.append(call_id)
    return ids
