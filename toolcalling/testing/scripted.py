"""A scripted stand-in for a chat model: tests queue the replies it gives, in order."""

from __future__ import annotations

import enum
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .bodies import chat_messages, prompt_text

__all__ = [
    "Reply",
    "ToolCall",
    "Usage",
    "RejectedRequest",
    "ScriptedModel",
    "SentUsage",
    "estimate_usage",
    "default_error_message",
]

DEFAULT_ERROR_MESSAGES: dict[int, tuple[str, str, str | None]] = {
    # status: (message, type, code) as the API words them.
    400: ("Bad request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error", None),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    408: ("Request timed out.", "timeout", None),
    429: (
        "Rate limit reached for requests. Please try again in 1s.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def default_error_message(status: int) -> tuple[str, str, str | None]:
    """Return the (message, type, code) the API typically sends with this status."""
    if status in DEFAULT_ERROR_MESSAGES:
        return DEFAULT_ERROR_MESSAGES[status]
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return (f"Error {status}.", kind, None)


@dataclass
class Usage:
    """Token counts for one reply; a missing count is estimated from the request and reply (``cached_tokens``
    from the prefix earlier requests shared, ``reasoning_tokens`` from whether the model reasons)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    @classmethod
    def coerce(cls, value: Usage | Mapping[str, int] | tuple[int, int] | None) -> Usage | None:
        """Accept the shorthand forms tests like to write: a Usage, a dict or a (prompt, completion) pair."""
        if value is None or isinstance(value, Usage):
            return value
        if isinstance(value, tuple):
            prompt, completion = value
            return cls(prompt_tokens=prompt, completion_tokens=completion)
        if isinstance(value, Mapping):
            return cls(**{key: value.get(key) for key in ("prompt_tokens", "completion_tokens", "cached_tokens",
                                                          "reasoning_tokens")})  # fmt: skip
        raise TypeError(f"usage must be a Usage, a mapping or a (prompt, completion) tuple, not {value!r}")


class SentUsage(enum.Enum):
    """What ``Reply.sent_usage`` may be besides a usage object sent as it is."""

    COUNTED = "counted"
    """The server's own counts (the default)."""
    OMITTED = "omitted"
    """No usage at all: a server that does not count, or ignores ``stream_options.include_usage``."""


@dataclass
class ToolCall:
    """One function call in a reply; ``arguments`` is the raw JSON text the model emits."""

    name: str
    arguments: str = "{}"
    id: str | None = None

    def __post_init__(self) -> None:
        # Dicts are serialised here so the wire always carries JSON text, while a str is sent
        # untouched so tests can deliberately emit malformed arguments.
        if not isinstance(self.arguments, str):
            self.arguments = json.dumps(self.arguments)


@dataclass
class Reply:
    """What a responder answers: text and/or tool calls, or an HTTP error."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str | None = None
    raw: bytes | None = None
    """Sent as the response body as it is (with ``status`` and ``headers``), for replies no real model sends."""
    model: str | None = None
    """The model name the answer reports (real endpoints often name a dated version); default: the one asked for."""
    interleaved: bool = False
    """On a reasoning request, a second reasoning item (Responses) or thinking block (Anthropic) between the text
    and the tool calls, as models that think between steps answer."""
    sent_usage: Any = SentUsage.COUNTED
    """The usage object the answer carries, sent as it is (``None``: ``null``), for servers that count wrongly:
    in the API's own shape (Anthropic's names on Anthropic); ``SentUsage.OMITTED``: none at all."""

    @property
    def is_error(self) -> bool:
        """True when this reply should be sent as an HTTP error instead of a completion."""
        return self.status >= 400

    def error_body(self) -> dict[str, Any]:
        """The OpenAI-style error JSON for an error reply."""
        message, kind, code = default_error_message(self.status)
        return {
            "error": {
                "message": self.error_message or message,
                "type": self.error_type or kind,
                "param": None,
                "code": self.error_code if self.error_code is not None else code,
            }
        }


@dataclass
class RejectedRequest:
    """A request body that failed validation, with the errors it was rejected for."""

    body: Any
    errors: list[str]


def estimate_usage(body: Mapping[str, Any], reply: Reply) -> Usage:
    """Fill in token counts deterministically so tests can assert on usage without scripting it."""
    given = reply.usage or Usage()
    prompt = given.prompt_tokens
    if prompt is None:
        prompt = len(prompt_text(body)) // 4
    completion = given.completion_tokens
    if completion is None:
        text = (reply.content or "") + "".join(call.arguments for call in reply.tool_calls)
        completion = len(text) // 4 + 1
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=given.cached_tokens,
                 reasoning_tokens=given.reasoning_tokens)  # fmt: skip


Responder = Callable[[dict[str, Any]], Reply]


class ScriptedModel:
    """Answers chat requests from a queue of scripted replies and records what it was sent.

    ``requests`` holds every valid request body in arrival order, ``rejected`` the ones that
    failed validation and ``unexpected`` the ones that arrived when nothing was queued.
    """

    model_name = "scripted-model"

    def __init__(self, replies: Iterable[Reply] = ()) -> None:
        self._queue: deque[Reply | Callable[[dict[str, Any]], Reply | str]] = deque(replies)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[dict[str, Any]] = []
        self.rejected: list[RejectedRequest] = []
        self.unexpected: list[dict[str, Any]] = []

    # --- scripting ------------------------------------------------------------------------------

    def queue(self, reply: Reply) -> Reply:
        """Queue a prepared Reply; tool calls without ids get one now so tests can refer to them."""
        with self._lock:
            self._assign_ids(reply)
            self._queue.append(reply)
        return reply

    def reply(
        self,
        content: str,
        *,
        usage: Usage | Mapping[str, int] | tuple[int, int] | None = None,
        finish_reason: str | None = None,
    ) -> Reply:
        """Queue a final text answer."""
        return self.queue(Reply(content=content, usage=Usage.coerce(usage), finish_reason=finish_reason))

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        content: str | None = None,
        usage: Usage | Mapping[str, int] | tuple[int, int] | None = None,
    ) -> Reply:
        """Queue an answer with one tool call; a str ``arguments`` is sent verbatim."""
        return self.calls((name, arguments), content=content, usage=usage)

    def calls(
        self,
        *calls: tuple[str, Mapping[str, Any] | str | None],
        content: str | None = None,
        usage: Usage | Mapping[str, int] | tuple[int, int] | None = None,
    ) -> Reply:
        """Queue one answer carrying several tool calls, e.g. ``calls(("a", {...}), ("b", {...}))``."""
        if not calls:
            raise ValueError("calls() needs at least one (name, arguments) pair")
        tool_calls = [
            ToolCall(name=name, arguments=args if isinstance(args, str) else json.dumps(dict(args or {})))
            for name, args in calls
        ]
        return self.queue(Reply(content=content, tool_calls=tool_calls, usage=Usage.coerce(usage)))

    def error(
        self,
        status: int = 500,
        message: str | None = None,
        *,
        type: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> Reply:
        """Queue an HTTP error response with the API's error JSON shape (``type`` and ``code`` as in it)."""
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
            headers["retry-after-ms"] = str(int(retry_after * 1000))
        return self.queue(
            Reply(status=status, error_message=message, error_type=type, error_code=code, headers=headers)
        )

    def raw(self, body: bytes | str, *, content_type: str = "application/json", status: int = 200) -> Reply:
        """Queue a response body sent as it is, e.g. a malformed completion or an HTML error page."""
        data = body.encode() if isinstance(body, str) else body
        return self.queue(Reply(status=status, raw=data, headers={"content-type": content_type}))

    def respond(self, func: Callable[[dict[str, Any]], Reply | str]) -> None:
        """Queue a callable that builds the reply from the request body when it arrives."""
        with self._lock:
            self._queue.append(func)

    # --- inspection -----------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """How many queued replies have not been used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def last_request(self) -> dict[str, Any]:
        """The most recent valid request body."""
        if not self.requests:
            raise AssertionError("ScriptedModel received no valid requests")
        return self.requests[-1]

    def assert_done(self) -> None:
        """Fail if replies are still queued or anything unexpected or invalid arrived."""
        problems: list[str] = []
        if self.pending:
            problems.append(f"{self.pending} queued replies were never requested")
        if self.unexpected:
            problems.append(f"{len(self.unexpected)} requests arrived with no reply queued")
        if self.rejected:
            problems.append("rejected requests: " + " | ".join("; ".join(r.errors) for r in self.rejected))
        if problems:
            raise AssertionError("ScriptedModel: " + ", ".join(problems))

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        """The history request ``index`` carried, as Chat Completions messages whichever endpoint was asked
        (a Responses request's instructions, messages, function calls and their outputs), so one test reads
        what either API was sent."""
        return chat_messages(self.requests[index])

    def tools(self, index: int = -1) -> list[str]:
        """The names of the tools request ``index`` offered, on any endpoint."""
        return list(self.tool_definitions(index))

    def tool_definitions(self, index: int = -1) -> dict[str, dict[str, Any]]:
        """The tools request ``index`` offered, by name, each as ``{"name", "description", "parameters"}``
        whichever endpoint was asked (Chat Completions nests them under ``function``, Anthropic calls the
        parameters ``input_schema``)."""
        definitions = {}
        for tool in self.requests[index].get("tools") or []:
            spec = tool.get("function", tool)
            parameters = spec.get("parameters", spec.get("input_schema"))
            definitions[spec.get("name")] = {"name": spec.get("name"), "description": spec.get("description"),
                                             "parameters": parameters}  # fmt: skip
        return definitions

    # --- responder protocol ---------------------------------------------------------------------

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            item = self._queue.popleft() if self._queue else None
            if item is None:
                self.unexpected.append(body)
        if item is None:
            return Reply(
                status=500,
                error_message="ScriptedModel: no reply queued for this request "
                f"(request #{len(self.requests)}; queue more replies in the test)",
                error_type="server_error",
                # Retrying cannot help an under-scripted test, so tell the SDK not to.
                headers={"x-should-retry": "false"},
            )
        if isinstance(item, Reply):
            return item
        produced = item(body)
        reply = Reply(content=produced) if isinstance(produced, str) else produced
        with self._lock:
            self._assign_ids(reply)
        return reply

    def on_rejected(self, body: Any, errors: list[str]) -> None:
        """Record a request the backend refused before it reached the script."""
        with self._lock:
            self.rejected.append(RejectedRequest(body=body, errors=list(errors)))

    def _assign_ids(self, reply: Reply) -> None:
        for call in reply.tool_calls:
            if call.id is None:
                call.id = f"call_{next(self._ids)}"
