"""``ReplayModel``: serves a recorded conversation's replies (``manage.py toolcalling_record``), strictly.

Each request must have the shape the recorded one had — the same tools (name, description, parameters) and the
same history (messages, tool calls with their arguments, tool results), in the same order; the system message
is left out, since instructions often carry the date. A request that differs is answered with an error whose
message is a diff, and ``assert_done()`` raises it, so the test fails saying what changed."""

from __future__ import annotations

import difflib
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .scripted import Reply, ToolCall, Usage, chat_messages

__all__ = ["FORMAT", "ReplayModel", "request_shape", "tool_shape"]

FORMAT = "toolcalling-replay/1"


def _arguments(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text  # malformed arguments are compared as the text the model sent


def tool_shape(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool definition of either API as ``{"name", "description", "parameters"}``."""
    nested = tool.get("function")
    function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else tool  # Responses: one level up
    return {
        "name": function.get("name"),
        "description": function.get("description") or "",
        "parameters": function.get("parameters") or {},
    }


def message_shape(message: Mapping[str, Any]) -> dict[str, Any]:
    """One history message without ids: its role, text, and (for an answer) the calls it asked for."""
    shape: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        shape["tool_calls"] = [
            {"name": call["function"]["name"], "arguments": _arguments(call["function"]["arguments"])}
            for call in message["tool_calls"]
        ]
    return shape


def request_shape(body: Mapping[str, Any], *, results: bool = True) -> dict[str, Any]:
    """What a replay compares of a Chat Completions or Responses request; ``results=False`` leaves tool
    results out (for tools whose results change from run to run)."""
    messages = [message_shape(m) for m in chat_messages(body) if m.get("role") not in ("system", "developer")]
    if not results:
        for message in messages:
            if message["role"] == "tool":
                message["content"] = "…"
    return {"tools": [tool_shape(t) for t in body.get("tools") or []], "messages": messages}


def _diff(expected: Any, actual: Any, index: int) -> str:
    def lines(value: Any) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    diff = difflib.unified_diff(lines(expected), lines(actual), "recorded", "sent", lineterm="", n=2)
    return f"request #{index + 1} differs from the recording:\n" + "\n".join(diff)


class ReplayModel:
    """A responder answering with a recording's replies, in order, to requests shaped as recorded.

    ``user_messages`` are the recording's user messages, for the test to send again; ``mismatches`` the diffs
    of requests that differed. ``compare_results=False`` does not compare tool results."""

    def __init__(self, path: str | Path, *, compare_results: bool = True) -> None:
        self.path = Path(path)
        self.recording: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        if self.recording.get("format") != FORMAT:
            raise ValueError(f"{self.path} is not a {FORMAT} recording (manage.py toolcalling_record writes one).")
        self.exchanges: list[dict[str, Any]] = list(self.recording["exchanges"])
        self.model_name = self.recording.get("model") or "replay-model"
        self.compare_results = compare_results
        self.requests: list[dict[str, Any]] = []
        self.mismatches: list[str] = []
        self._lock = threading.Lock()

    @property
    def user_messages(self) -> list[str]:
        return list(self.recording.get("user_messages") or [])

    @property
    def user(self) -> str | None:
        return self.recording.get("user")

    @property
    def assistant(self) -> str | None:
        return self.recording.get("assistant")

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            if index >= len(self.exchanges):
                problem = f"request #{index + 1} was not recorded: the recording has {len(self.exchanges)} requests"
                self.mismatches.append(problem)
                return self._refuse(problem)
            exchange = self.exchanges[index]
            expected = self._comparable(exchange["request"])
            actual = request_shape(body, results=self.compare_results)
            if actual != expected:
                problem = _diff(expected, actual, index)
                self.mismatches.append(problem)
                return self._refuse(problem)
        reply = exchange["reply"]
        calls = [ToolCall(name=c["name"], arguments=json.dumps(c["arguments"]) if not isinstance(c["arguments"], str)
                          else c["arguments"], id=c.get("id")) for c in reply.get("tool_calls") or []]  # fmt: skip
        usage = reply.get("usage") or {}
        return Reply(
            content=reply.get("content"),
            tool_calls=calls,
            usage=Usage(prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens")),
        )

    def _comparable(self, recorded: dict[str, Any]) -> dict[str, Any]:
        if self.compare_results:
            return recorded
        messages = [dict(m, content="…") if m["role"] == "tool" else m for m in recorded["messages"]]
        return {"tools": recorded["tools"], "messages": messages}

    @staticmethod
    def _refuse(problem: str) -> Reply:
        # Retrying the same request cannot make it match.
        return Reply(status=400, error_message=problem, headers={"x-should-retry": "false"})

    def assert_done(self) -> None:
        """Fail when a request differed from the recording or a recorded reply was never asked for."""
        problems = list(self.mismatches)
        unused = len(self.exchanges) - len(self.requests)
        if unused > 0:
            problems.append(f"{unused} recorded replies were never requested")
        if problems:
            raise AssertionError(f"Replay of {self.path.name}:\n" + "\n\n".join(problems))
