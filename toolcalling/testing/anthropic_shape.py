"""A scripted reply in the Anthropic Messages API's shape: the ``message`` object, or its event stream; and the
prompt cache that reports ``cache_read_input_tokens`` for a repeated prefix marked with ``cache_control``.

A thinking request (``thinking`` enabled) is answered with a thinking block first, with a signature the
backend remembers, so a later request must send it back unchanged, as the real API requires.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from .scripted import Reply

__all__ = ["PromptCache", "message_events", "message_object", "reply_blocks"]

# Small pieces make the client's delta-reassembly code do real work, as with a real model.
CONTENT_PIECE = 4
ARGUMENTS_PIECE = 5
SIGNATURE_PIECE = 16

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The API's error object for a status."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": f"req_{uuid.uuid4().hex[:24]}"}


def _pieces(text: str, size: int) -> list[str]:
    if len(text) <= 1:
        return [text] if text else []
    size = max(1, min(size, (len(text) + 1) // 2))
    return [text[i : i + size] for i in range(0, len(text), size)]


def thinking_block(text: str) -> dict[str, Any]:
    """A thinking block with a signature of its own."""
    signature = f"Eq{uuid.uuid4().hex}{uuid.uuid4().hex}=="
    return {"type": "thinking", "thinking": f"{text} ({uuid.uuid4().hex[:8]}).", "signature": signature}


def reply_blocks(reply: Reply, *, thinking: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The content blocks of a reply, in the API's order: thinking, text, tool uses; with ``interleaved``
    thinking, a second thinking block between the text and the tool uses, as Claude 4 models think between
    steps."""
    blocks: list[dict[str, Any]] = [thinking] if thinking is not None else []
    if reply.content is not None:
        blocks.append({"type": "text", "text": reply.content})
    if thinking is not None and reply.interleaved:
        blocks.append(thinking_block("Now the tools"))
    for call in reply.tool_calls:
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):  # the API sends text the model wrote that is no object so
            arguments = {"INVALID_JSON": call.arguments}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def message_object(
    body: Mapping[str, Any], reply: Reply, blocks: list[dict[str, Any]], usage: dict[str, Any]
) -> dict[str, Any]:
    """The ``message`` object the API answers with."""
    reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or body["model"],
        "content": blocks,
        "stop_reason": STOP_REASONS.get(reason, reason),
        "stop_sequence": None,
        "usage": usage,
    }


def message_events(message: dict[str, Any], *, given_usage: bool = False) -> Iterator[bytes]:
    """The server-sent events of a streamed message, from ``message_start`` to ``message_stop``; ``given_usage``:
    the message's usage (or its absence) goes as it is in ``message_start`` and ``message_delta``."""

    def event(kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, **fields}
        return f"event: {kind}\ndata: ".encode() + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    usage: dict[str, Any] = message.get("usage") or {}
    started = {**message, "content": [], "stop_reason": None}
    if not given_usage:
        started["usage"] = {**usage, "output_tokens": 1}
    yield event("message_start", message=started)
    yield event("ping")
    for index, block in enumerate(message["content"]):
        if block["type"] == "thinking":
            yield event("content_block_start", index=index, content_block={"type": "thinking", "thinking": "",
                                                                          "signature": ""})  # fmt: skip
            for piece in _pieces(block["thinking"], CONTENT_PIECE):
                yield event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
            for piece in _pieces(block["signature"], SIGNATURE_PIECE):
                yield event("content_block_delta", index=index, delta={"type": "signature_delta", "signature": piece})
        elif block["type"] == "text":
            yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in _pieces(block["text"], CONTENT_PIECE):
                yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        elif block["type"] == "tool_use":
            yield event("content_block_start", index=index, content_block={**block, "input": {}})
            raw = block["input"].get("INVALID_JSON")
            if not isinstance(raw, str) or len(block["input"]) != 1:
                raw = json.dumps(block["input"], separators=(",", ":"))
            for piece in _pieces(raw, ARGUMENTS_PIECE):
                yield event("content_block_delta", index=index, delta={"type": "input_json_delta",
                                                                       "partial_json": piece})  # fmt: skip
        else:
            yield event("content_block_start", index=index, content_block=block)
        yield event("content_block_stop", index=index)
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    if not given_usage:
        yield event("message_delta", delta=delta, usage={"output_tokens": usage["output_tokens"]})
    elif "usage" in message:
        yield event("message_delta", delta=delta, usage=message["usage"])
    else:
        yield event("message_delta", delta=delta)
    yield event("message_stop")


class PromptCache:
    """Anthropic's prompt cache, in small: a request is cut into blocks (tools, system, then each message's
    content), and at each block marked ``cache_control`` the prefix up to it is written to the cache; a later
    request reads the longest cached prefix that ends at one of its block boundaries before its last cache
    point. Tokens are estimated as four characters each, as ``estimate_usage`` does."""

    KEPT = 256

    def __init__(self) -> None:
        self._prefixes: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def tokens(self, body: Mapping[str, Any]) -> tuple[int, int]:
        """``(read, written)`` tokens for this request, remembering the prefixes it marked."""
        boundaries: list[tuple[str, int, bool]] = []  # (hash of the prefix, its characters, marked)
        digest = hashlib.sha256()
        length = 0
        for block, marked in _cache_blocks(body):
            text = json.dumps(block, sort_keys=True, separators=(",", ":"))
            digest.update(text.encode())
            length += len(text)
            boundaries.append((digest.copy().hexdigest(), length, marked))
        marks = [n for n, (_, _, marked) in enumerate(boundaries) if marked]
        if not marks:
            return 0, 0
        last = marks[-1]
        with self._lock:
            read = max((boundaries[n][1] for n in range(last + 1) if boundaries[n][0] in self._prefixes), default=0)
            for n in marks:
                self._prefixes[boundaries[n][0]] = None
                self._prefixes.move_to_end(boundaries[n][0])
            while len(self._prefixes) > self.KEPT:
                self._prefixes.popitem(last=False)
        return read // 4, (boundaries[last][1] - read) // 4


def _cache_blocks(body: Mapping[str, Any]) -> Iterator[tuple[Any, bool]]:
    """The request's blocks in the cache's order, without their cache markers, each with whether it had one."""

    def plain(block: Any) -> tuple[Any, bool]:
        if isinstance(block, Mapping) and "cache_control" in block:
            return {k: v for k, v in block.items() if k != "cache_control"}, block["cache_control"] is not None
        return block, False

    for tool in body.get("tools") or ():
        yield plain(tool)
    system = body.get("system")
    for block in [system] if isinstance(system, str) else system or ():
        yield plain(block)
    for message in body.get("messages") or ():
        content = message.get("content")
        yield {"role": message.get("role")}, False
        for block in [content] if isinstance(content, str) else content or ():
            yield plain(block)
