"""Strict readers of a model API's JSON answer: each names where a value that is not what it must be sits, so
a malformed answer becomes a ``ModelError`` (``invalid``) before anything of it is stored."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ._base import invalid


def parse_json(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        preview = raw[:60] if isinstance(raw, str) else raw[:60].decode("utf-8", "replace")
        raise invalid(f"the body is not JSON ({preview!r})")


def event_data(lines: Iterable[str]) -> Iterator[Any]:
    """The parsed JSON of a server-sent event stream's ``data:`` lines, until ``[DONE]``; other fields are skipped."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        if payload:
            yield parse_json(payload)


def arguments(value: Any) -> str:
    """Argument text; some servers send an object instead of JSON text, which is the same thing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    raise invalid("tool call arguments are neither text nor an object")


def count(value: Any) -> int:
    """A token count as the usage object gives it; anything that is not a count is none."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def detail(usage: dict[str, Any], group: str, key: str) -> int:
    """A count inside one of usage's ``*_details`` objects (absent on many servers, or ``null``)."""
    details = usage.get(group)
    return count(details.get(key)) if isinstance(details, dict) else 0


def json_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(f"{where} is {'missing' if value is None else 'not an object'}")
    return value


def text(value: Any, where: str) -> str | None:
    """Text, or ``None``; a list of text parts (as some servers send) is joined."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in value):
        return "".join(p["text"] for p in value)
    raise invalid(f"{where} is not text")


def string(value: Any) -> str:
    return value if isinstance(value, str) else ""
