"""A scripted reply in the Responses API's shape: the ``response`` object, or its event stream.

Reasoning models answer with a reasoning item first (its encrypted content when the request included it),
as the real API does; the backend remembers what it issued so a later request must send it back.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from .scripted import Reply

__all__ = ["response_object", "response_events"]

# Small pieces make the client's delta-reassembly code do real work, as with a real model.
CONTENT_PIECE = 4
ARGUMENTS_PIECE = 5


def _pieces(text: str, size: int) -> list[str]:
    if len(text) <= 1:
        return [text] if text else []
    size = max(1, min(size, (len(text) + 1) // 2))
    return [text[i : i + size] for i in range(0, len(text), size)]


def output_items(reply: Reply, *, reasoning: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The output items of a reply, in the API's order: reasoning, the message, the function calls; with
    ``interleaved`` reasoning, a second reasoning item before the calls."""
    items: list[dict[str, Any]] = [reasoning] if reasoning is not None else []
    if reply.content is not None:
        items.append({
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply.content, "annotations": [], "logprobs": []}],
        })  # fmt: skip
    if reasoning is not None and reply.interleaved:
        items.append({**reasoning, "id": f"rs_{uuid.uuid4().hex[:24]}",
                      "encrypted_content": reasoning["encrypted_content"] and f"gAAAA{uuid.uuid4().hex}"})  # fmt: skip
    for call in reply.tool_calls:
        items.append({"id": f"fc_{uuid.uuid4().hex[:24]}", "type": "function_call", "status": "completed",
                      "call_id": call.id, "name": call.name, "arguments": call.arguments})  # fmt: skip
    return items


def response_object(
    body: dict[str, Any], reply: Reply, items: list[dict[str, Any]], usage: dict[str, int], *, status: str = "completed"
) -> dict[str, Any]:
    """The ``response`` object the API answers with (``store: false``: nothing of it is kept)."""
    incomplete = reply.finish_reason == "length"
    reasoning = body.get("reasoning") or {}
    return {
        "id": f"resp_{uuid.uuid4().hex[:32]}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete and status == "completed" else status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": reply.model or body["model"],
        "output": items,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": {
            "input_tokens": usage["input"],
            "input_tokens_details": {"cached_tokens": usage["cached"]},
            "output_tokens": usage["output"],
            "output_tokens_details": {"reasoning_tokens": usage["reasoning"]},
            "total_tokens": usage["input"] + usage["output"],
        },
        "user": None,
        "metadata": {},
    }


def response_events(response: dict[str, Any]) -> Iterator[bytes]:
    """The server-sent events of a streamed response, ending with ``response.completed``."""
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": next(sequence), **fields}
        return f"event: {kind}\ndata: ".encode() + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item={**item, "content": [],
                                                                               "status": "in_progress"})  # fmt: skip
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0,
                        part=part)  # fmt: skip
            for piece in _pieces(text, CONTENT_PIECE):
                yield event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                            delta=piece, logprobs=[])  # fmt: skip
            yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                        text=text, logprobs=[])  # fmt: skip
            yield event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                        part={**part, "text": text})  # fmt: skip
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=index, item={**item, "arguments": "",
                                                                               "status": "in_progress"})  # fmt: skip
            for piece in _pieces(item["arguments"], ARGUMENTS_PIECE):
                yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                            delta=piece)  # fmt: skip
            yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                        arguments=item["arguments"])  # fmt: skip
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    yield event(final, response=response)
