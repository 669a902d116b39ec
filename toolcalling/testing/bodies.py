"""A model request's body read the same way whatever API sent it: its prompt as one text (what a prompt cache
sees) and its history as Chat Completions messages (converted from Responses input items or Anthropic
messages), for the test doubles and the offline model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def prompt_text(body: Mapping[str, Any]) -> str:
    """The request's prompt as one text, stable parts first (instructions, tools, then the history), as a
    provider's prompt cache sees it; on either endpoint."""
    head = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    if body.get("system"):  # Anthropic's system prompt, text or text blocks
        head.append(body["system"])
    history = body.get("messages") if "messages" in body else body.get("input")
    if isinstance(history, str):
        history = [history]
    return json.dumps(head + list(body.get("tools") or []) + list(history or []))


def chat_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A request's history as Chat Completions messages: as sent, or converted from Responses input items or
    Anthropic messages."""
    if "messages" in body:
        if "system" in body or any(_anthropic_blocks(m) for m in body["messages"]):
            return anthropic_messages(body)
        return list(body["messages"])
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input") or []
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]}}  # fmt: skip
            if not out or out[-1]["role"] != "assistant":  # the calls of one answer join its text
                out.append({"role": "assistant", "content": None})
            out[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
        elif kind == "message":
            content = item["content"]
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            out.append({"role": item["role"], "content": content})
    return out


ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"})


def _anthropic_blocks(message: Any) -> bool:
    content = message.get("content") if isinstance(message, Mapping) else None
    return isinstance(content, list) and any(isinstance(b, Mapping) and b.get("type") in ANTHROPIC_BLOCKS
                                             for b in content)  # fmt: skip


def _joined(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text")
    return content if isinstance(content, str) else ""


def anthropic_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request's ``system`` and messages as Chat Completions messages: ``tool_use`` blocks are
    tool calls, each ``tool_result`` a tool message, each text block of a user message a user message."""
    out: list[dict[str, Any]] = []
    if body.get("system"):
        out.append({"role": "system", "content": _joined(body["system"])})
    for message in body.get("messages") or ():
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if message.get("role") == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": _joined(blocks) or None}
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            calls = [
                {"id": b["id"], "type": "function",
                 "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})}}
                for b in uses
            ]  # fmt: skip
            if calls:
                item["tool_calls"] = calls
            out.append(item)
            continue
        for block in blocks:  # messages of one role in a row were joined into one: each block is one again
            if block.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                            "content": _joined(block.get("content"))})  # fmt: skip
            elif block.get("type") == "text":
                out.append({"role": "user", "content": block.get("text")})
    return out
