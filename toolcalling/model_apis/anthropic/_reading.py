"""Strict readers of the Messages API's answers: the ``message`` object and its event stream.

Anything malformed is a ``ModelError`` (``invalid``) before anything of it is stored. Usage: the API counts the
input in three parts (``input_tokens`` after the last cache point read or written, ``cache_read_input_tokens``,
``cache_creation_input_tokens``); their sum is ``prompt_tokens``, the reads are ``cached_tokens``.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from django.utils.translation import gettext as _

from ...exceptions import ModelError
from .. import _reading as read
from .._base import DeltaCallback, ModelReply, RequestedCall, Usage, invalid, tool_input_of

logger = logging.getLogger("toolcalling")

# How the API sends tool input the model wrote as text that is not a JSON object.
INVALID_JSON = "INVALID_JSON"

# The API's stop reasons as the finish reasons the rest of the app knows.
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                  "refusal": "content_filter", "pause_turn": "stop"}  # fmt: skip


def reply_from_message(data: Any, requested_model: str) -> ModelReply:
    """A ``message`` object (parsed JSON) as a ``ModelReply``: its text and tool calls, and its content blocks in
    their order (``provider_items``: thinking with its signature, text, and each tool use by its id, whose input
    the stored call holds), to be sent back as they came."""
    data = read.json_object(data, "the body")
    if data.get("type") == "error":
        error = _("The model endpoint answered with an error: %(message)s")
        raise ModelError(error % {"message": read.error_message(data)})
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise invalid("the message has no content list")
    log_dropped(data.get("input_transformations"))
    text: list[str] = []
    calls: list[RequestedCall] = []
    issued: list[dict[str, Any]] = []
    for n, block in enumerate(blocks):
        block = read.json_object(block, f"content[{n}]")
        kind = block.get("type")
        if kind == "text":
            text.append(read.text(block.get("text"), f"content[{n}].text") or "")
            issued.append({"type": "text", "text": text[-1]})
        elif kind == "tool_use":
            calls.append(_call(block, f"content[{n}]"))
            issued.append({"type": "tool_use", "id": calls[-1].id, "name": calls[-1].name})
        elif kind == "thinking":
            if not isinstance(block.get("signature"), str) or not isinstance(block.get("thinking"), str):
                raise invalid(f"content[{n}] is a thinking block without its thinking text and signature")
            issued.append({"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]})
        elif kind == "redacted_thinking":
            if not isinstance(block.get("data"), str):
                raise invalid(f"content[{n}] is a redacted thinking block without its data")
            issued.append({"type": "redacted_thinking", "data": block["data"]})
        elif not isinstance(kind, str):
            raise invalid(f"content[{n}] has no type")
        # Other block types belong to server tools the app never offers; they carry nothing to store.
    stop_reason = read.string(data.get("stop_reason"))
    # A refusal's words are in its text blocks; a refusal without any is an empty answer.
    content = read.answer_text("".join(text) if text else None, "" if stop_reason == "refusal" else None,
                               bool(calls), "the message has neither text nor tool calls")  # fmt: skip
    return ModelReply(
        content=content,
        tool_calls=calls,
        usage=usage(data.get("usage")),
        model=read.string(data.get("model")) or requested_model,
        finish_reason=FINISH_REASONS.get(stop_reason, stop_reason or None),
        provider_items=issued,
    )


class EventAssembler:
    """Builds the ``message`` of a Messages event stream (``message_start``, ``content_block_start/delta/stop``,
    ``message_delta``, ``message_stop``) and reads it as one answer; text deltas go to ``on_delta`` as they
    come. ``finish()`` refuses a stream that never stopped."""

    def __init__(self, requested_model: str, on_delta: DeltaCallback) -> None:
        self.requested_model = requested_model
        self.on_delta = on_delta
        self.tool_input = tool_input_of(on_delta)
        self.message: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, list[str]] = {}
        self.stopped = False

    def feed(self, data: Any) -> None:
        event = read.json_object(data, "a stream event")
        kind = event.get("type")
        if kind == "error":
            text = _("The model endpoint answered with an error: %(message)s")
            raise ModelError(text % {"message": read.error_message(event)})
        if kind == "message_start":
            self.message = copy.deepcopy(read.json_object(event.get("message"), "the message of message_start"))
            return
        if kind == "message_stop":
            self.stopped = True
        if kind not in ("message_delta", "content_block_start", "content_block_delta", "content_block_stop"):
            return  # ping, message_stop, and event types newer than this reader
        message = self._started(kind)
        if kind == "message_delta":
            delta = read.json_object(event.get("delta"), "a message delta")
            message.update({key: value for key, value in delta.items() if key in ("stop_reason", "stop_sequence")})
            if isinstance(event.get("usage"), dict):
                message["usage"] = {**(message.get("usage") or {}), **event["usage"]}
            return
        index = event.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise invalid(f"a {kind} event's index is not a number")
        if kind == "content_block_start":
            self.blocks[index] = dict(read.json_object(event.get("content_block"), "a started content block"))
        elif kind == "content_block_delta":
            self._add(index, read.json_object(event.get("delta"), "a content block delta"))
        elif kind == "content_block_stop":
            self._close(index)

    def finish(self) -> ModelReply:
        if self.message is None or not self.stopped:
            raise invalid("the stream ended before the message stopped (is it a stream of server-sent events?)")
        for index in list(self.partial_json):
            self._close(index)
        content = [self.blocks[index] for index in sorted(self.blocks)]
        return reply_from_message({**self.message, "content": content}, self.requested_model)

    def _started(self, kind: Any) -> dict[str, Any]:
        if self.message is None:
            raise invalid(f"the stream sent {kind!r} before message_start")
        return self.message

    def _add(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks.get(index)
        if block is None:
            raise invalid(f"a delta for content block {index}, which never started")
        kind = delta.get("type")
        if kind == "text_delta":
            piece = read.text(delta.get("text"), "a text delta") or ""
            block["text"] = read.string(block.get("text")) + piece
            if piece:
                self.on_delta(piece)
        elif kind == "input_json_delta":
            piece = read.string(delta.get("partial_json"))
            self.partial_json.setdefault(index, []).append(piece)
            call_id, name = read.string(block.get("id")), read.string(block.get("name"))
            if self.tool_input is not None and piece and call_id and name and block.get("type") == "tool_use":
                self.tool_input(call_id, name, piece)
        elif kind == "thinking_delta":
            block["thinking"] = read.string(block.get("thinking")) + read.string(delta.get("thinking"))
        elif kind == "signature_delta":
            block["signature"] = read.string(block.get("signature")) + read.string(delta.get("signature"))

    def _close(self, index: int) -> None:
        """A finished tool_use block's input is the JSON its deltas spelled out (none: the start's input)."""
        pieces = self.partial_json.pop(index, None)
        if pieces is not None and index in self.blocks:
            raw = "".join(pieces)
            try:
                value = json.loads(raw) if raw.strip() else {}
            except ValueError:
                value = None
            # Text that is no object goes to the tool's validation as it came, as on the other APIs.
            self.blocks[index]["input"] = value if isinstance(value, dict) else {INVALID_JSON: raw}


def log_dropped(transformations: Any) -> None:
    """Log (INFO) the thinking blocks the API dropped from the request (``input_transformations``, "one entry per
    block, in request order"): reasoning the model did not see, which costs input and may cost quality. Only a log:
    the stored conversation is what was sent, and the API judges it again on the next request."""
    if not isinstance(transformations, list):
        return
    dropped = [f"{entry.get('path')} ({entry.get('reason')})" for entry in transformations
               if isinstance(entry, dict) and entry.get("type") == "thinking_dropped"]  # fmt: skip
    if dropped:
        logger.info("The model API dropped thinking blocks of the request, which the conversation before them no "
                    "longer matched: %s", ", ".join(dropped))  # fmt: skip


def _call(block: dict[str, Any], where: str) -> RequestedCall:
    name = read.text(block.get("name"), f"{where}.name")
    if not name:
        raise invalid(f"{where} has no tool name")
    value = block.get("input")
    if value is not None and not isinstance(value, dict):
        raise invalid(f"{where}.input is not an object")
    if value is not None and set(value) == {INVALID_JSON} and isinstance(value[INVALID_JSON], str):
        return RequestedCall(id=read.string(block.get("id")), name=name, arguments=value[INVALID_JSON])
    return RequestedCall(id=read.string(block.get("id")), name=name, arguments=read.arguments(value or {}))


def usage(value: Any) -> Usage:
    """The Messages API's usage: the input is its three parts together, the cache reads are ``cached_tokens``.
    Unknown without ``input_tokens`` and ``output_tokens`` as counts, or with a cache count that is there
    (not ``null``) and no count."""
    if not isinstance(value, dict):
        return read.unknown_usage()
    fresh, completion = read.count(value.get("input_tokens")), read.count(value.get("output_tokens"))
    cache = [value.get(key) for key in ("cache_read_input_tokens", "cache_creation_input_tokens")]
    reads, writes = (0 if given is None else read.count(given) for given in cache)
    if fresh is None or completion is None or reads is None or writes is None:
        return read.unknown_usage()
    prompt = fresh + reads + writes
    if prompt + completion > 2 * read.MAX_COUNT:  # each part fits, their sum must fit the stored columns too
        raise invalid(f"the token counts in usage are out of range (more than {2 * read.MAX_COUNT} in all)")
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        cached_tokens=reads,
        cache_write_tokens=writes,
        reasoning_tokens=min(read.detail(value, "output_tokens_details", "thinking_tokens"), completion),
    )
