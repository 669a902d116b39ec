"""Transport-independent handler that answers OpenAI Chat Completions and Responses requests, and Anthropic
Messages requests, from a responder.

One backend is one provider: it remembers the prompts it saw (so a repeated prefix is reported as cached
tokens) and the reasoning items and thinking blocks it issued (so a replay without them is refused, as the
real APIs do).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from . import anthropic_shape
from .bodies import prompt_text
from .responses_shape import output_items, response_events, response_object
from .rules import validate_chat_request
from .rules_anthropic import IssuedThinking, binding_transformations, thinking_enabled, validate_messages_request
from .rules_responses import Issued, is_reasoning_model, validate_responses_request
from .scripted import Reply, SentUsage, estimate_usage

__all__ = ["ChatBackend", "Responder", "HandlerResult", "split_text"]

HandlerResult = tuple[int, dict[str, str], bytes | Iterator[bytes]]

JSON_HEADERS = {"content-type": "application/json"}
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}

BAD_JSON_MESSAGE = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
    "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
)
NO_ANTHROPIC_KEY_MESSAGE = "x-api-key header is required"
NO_KEY_MESSAGE = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header using "
    "Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
)

# Small pieces make the client's delta-reassembly code do real work, as with a real model.
CONTENT_PIECE = 4
ARGUMENTS_PIECE = 5

# The prompt cache works in whole blocks of this many tokens (OpenAI's is 128 from 1,024 tokens on; the
# small prompts of tests need a smaller one to show anything), over the prompts of the last PROMPTS_KEPT requests.
CACHE_BLOCK = 16
PROMPTS_KEPT = 32
# Azure OpenAI's v1 surface: ``https://<resource>.openai.azure.com/openai/v1/`` takes the OpenAI API's paths and
# bodies, the deployment's name as the model (Microsoft Learn, "Azure OpenAI API version lifecycle", v1 API).
AZURE_V1 = "/openai/v1/"
# What a reasoning model spends on reasoning per answer, unless the reply says otherwise.
REASONING_TOKENS = 24


class Responder(Protocol):
    """Anything that turns a validated request body into a Reply."""

    def __call__(self, body: dict[str, Any]) -> Reply: ...


def split_text(text: str, size: int) -> list[str]:
    """Cut text into pieces of at most ``size`` characters, always at least two for non-trivial text."""
    if len(text) <= 1:
        return [text] if text else []
    size = max(1, min(size, (len(text) + 1) // 2))
    return [text[i : i + size] for i in range(0, len(text), size)]


def shared_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of two texts: a binary search of slice comparisons, which run in
    C, so long prompts stay cheap to compare (``os.path.commonprefix`` walks them a character at a time)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _dumps(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def _error(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None) -> HandlerResult:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return status, dict(JSON_HEADERS), _dumps(body)


def _anthropic_error(status: int, message: str, kind: str = "", code: str | None = None) -> HandlerResult:
    return status, dict(JSON_HEADERS), _dumps(anthropic_shape.error_body(status, message))


def send_usage(answer: dict[str, Any], reply: Reply) -> bool:
    """Put the usage a reply gives (``Reply.sent_usage``) in place of the server's counts in ``answer``, or take
    usage out of it; whether it gave one."""
    if reply.sent_usage is SentUsage.COUNTED:
        return False
    if reply.sent_usage is SentUsage.OMITTED:
        answer.pop("usage", None)
    else:
        answer["usage"] = reply.sent_usage
    return True


class Answered(Exception):  # noqa: N818 - it carries an answer, it is not an error
    """A request answered before it reached the reply's shaping (refused, an error reply, a raw body)."""

    def __init__(self, result: HandlerResult) -> None:
        super().__init__(result[0])
        self.result = result


class ChatBackend:
    """Serves ``/v1/chat/completions``, ``/v1/responses`` and ``/v1/models`` the way the OpenAI API does, and
    ``/v1/messages`` the way Anthropic's does."""

    def __init__(self, responder: Responder, *, model_name: str | None = None, require_auth: bool = True) -> None:
        self.responder = responder
        self.model_name = model_name or getattr(responder, "model_name", None) or "scripted-model"
        self.require_auth = require_auth
        self.issued = Issued()
        self.paths: deque[str] = deque(maxlen=PROMPTS_KEPT)
        """The paths (with their query strings) of the latest requests, oldest first."""
        self.thinking = IssuedThinking()
        self.prompt_cache = anthropic_shape.PromptCache()
        self._prompts: deque[str] = deque(maxlen=PROMPTS_KEPT)
        self._lock = threading.Lock()

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> HandlerResult:
        """Answer one HTTP request; the body is bytes, or an iterator of SSE bytes when streaming."""
        lowered = {key.lower(): value for key, value in headers.items()}
        self.paths.append(path)
        route = path.split("?", 1)[0].rstrip("/")
        azure = route.startswith(AZURE_V1)
        if azure:
            route = route[len(AZURE_V1) - 1 :]
        elif route.startswith("/v1/"):
            route = route[3:]
        method = method.upper()

        if route == "/messages" and method == "POST":
            # The API takes its key as x-api-key or (as this SDK sends it) a bearer token.
            if self.require_auth and not (lowered.get("x-api-key", "").strip() or self._authorised(lowered)):
                return _anthropic_error(401, NO_ANTHROPIC_KEY_MESSAGE)
            return self._messages(body, lowered)
        # Azure's v1 surface also takes the key as ``api-key`` (the header ``openai.AzureOpenAI`` sends).
        if self.require_auth and not (self._authorised(lowered) or (azure and lowered.get("api-key", "").strip())):
            return _error(401, NO_KEY_MESSAGE)
        if route == "/chat/completions" and method == "POST":
            return self._chat(body)
        if route == "/responses" and method == "POST":
            return self._responses(body)
        if route == "/models" and method == "GET":
            return 200, dict(JSON_HEADERS), _dumps({"object": "list", "data": [self._model_entry()]})
        if route == f"/models/{self.model_name}" and method == "GET":
            return 200, dict(JSON_HEADERS), _dumps(self._model_entry())
        return _error(404, f"Invalid URL ({method} {path.split('?', 1)[0]})")

    @staticmethod
    def _authorised(headers: Mapping[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and bool(token.strip())

    def _model_entry(self) -> dict[str, Any]:
        return {"id": self.model_name, "object": "model", "created": 0, "owned_by": "toolcalling"}

    def _ask(
        self, raw: bytes, validate: Callable[[Any], list[str]], error: Callable[..., HandlerResult] = _error
    ) -> tuple[dict[str, Any], Reply]:
        """Parse and validate a request body and ask the responder; ``Answered`` when the HTTP answer is known.
        ``error`` shapes the API's error answers."""
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise Answered(error(400, BAD_JSON_MESSAGE))
        errors = validate(body)
        if errors:
            on_rejected: Callable[[Any, list[str]], None] | None = getattr(self.responder, "on_rejected", None)
            if on_rejected is not None:
                on_rejected(body, errors)
            raise Answered(error(400, "; ".join(errors)))
        assert isinstance(body, dict)  # guaranteed by validation; narrows the type

        try:
            reply = self.responder(body)
        except Exception as exc:  # a broken responder must fail the test loudly, not hang it
            raise Answered(error(500, f"Responder raised {type(exc).__name__}: {exc}", "server_error"))
        if reply.raw is not None:
            raise Answered((reply.status, dict(reply.headers), reply.raw))
        if reply.is_error:
            status, headers, payload = error(reply.status, reply.error_body()["error"]["message"])
            if error is _error:
                payload = _dumps(reply.error_body())
            raise Answered((status, {**headers, **reply.headers}, payload))
        for call in reply.tool_calls:
            if call.id is None:
                # Responders normally number their own calls; this only covers hand-built replies.
                call.id = f"call_{uuid.uuid4().hex[:24]}"
        return body, reply

    def usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        """Input, cached, output and reasoning tokens of a reply: what the reply says, else estimated. Cached
        are the whole blocks of the longest prefix this prompt shares with a recent one; a reasoning model's
        output includes its reasoning."""
        usage = estimate_usage(body, reply)
        prompt = prompt_text(body)
        with self._lock:
            shared = max((shared_prefix(prompt, seen) for seen in self._prompts), default=0)
            self._prompts.append(prompt)
        given = reply.usage
        prompt_tokens = usage.prompt_tokens or 0
        cached = usage.cached_tokens
        if cached is None:
            cached = min(prompt_tokens, shared // 4 // CACHE_BLOCK * CACHE_BLOCK)
        reasoning = usage.reasoning_tokens
        if reasoning is None:
            reasoning = REASONING_TOKENS if is_reasoning_model(body.get("model")) else 0
        output = usage.completion_tokens or 0
        if given is None or given.completion_tokens is None:
            output += reasoning  # an estimate of the visible output; a given count already includes reasoning
        return {"input": prompt_tokens, "cached": cached, "output": output, "reasoning": reasoning}

    def _responses(self, raw: bytes) -> HandlerResult:
        try:
            body, reply = self._ask(raw, lambda body: validate_responses_request(body, self.issued))
        except Answered as answered:
            return answered.result
        reasoning: dict[str, Any] | None = None
        if is_reasoning_model(body["model"]):
            included = "reasoning.encrypted_content" in (body.get("include") or [])
            encrypted = f"gAAAA{uuid.uuid4().hex}{uuid.uuid4().hex}" if included else None
            reasoning_id = f"rs_{uuid.uuid4().hex[:24]}"
            reasoning = {"id": reasoning_id, "type": "reasoning", "summary": [], "encrypted_content": encrypted}
        output = output_items(reply, reasoning=reasoning)
        self.issued.record(output, body["model"])
        response = response_object(body, reply, output, self.usage(body, reply))
        send_usage(response, reply)
        if body.get("stream") is True:
            return 200, {**SSE_HEADERS, **reply.headers}, response_events(response)
        return 200, {**JSON_HEADERS, **reply.headers}, _dumps(response)

    def _messages(self, raw: bytes, headers: Mapping[str, str]) -> HandlerResult:
        try:
            body, reply = self._ask(raw, lambda body: validate_messages_request(body, self.thinking, headers),
                                    _anthropic_error)  # fmt: skip
        except Answered as answered:
            return answered.result
        thinking: dict[str, Any] | None = None
        if thinking_enabled(body):
            thinking = anthropic_shape.thinking_block("The user asked something; thinking it over")
        counts = self.usage(body, reply)
        if reply.usage is not None and reply.usage.cached_tokens is not None:
            read, written = counts["cached"], 0
        else:
            read, written = self.prompt_cache.tokens(body)
            # The parts never exceed the input as estimated (or as the reply gives it).
            read = min(read, counts["input"])
            written = min(written, counts["input"] - read)
        given = reply.usage
        if given is None or given.reasoning_tokens is None:  # a thinking request reasons, whatever the model
            spent = REASONING_TOKENS if thinking is not None else 0
            if given is None or given.completion_tokens is None:
                counts["output"] += spent - counts["reasoning"]
            counts["reasoning"] = spent
        usage = {
            "input_tokens": max(0, counts["input"] - read - written),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": counts["output"],
            "output_tokens_details": {"thinking_tokens": counts["reasoning"]},
            "service_tier": "standard",
        }
        blocks = anthropic_shape.reply_blocks(reply, thinking=thinking)
        dropped = binding_transformations(body, self.thinking, headers)
        self.thinking.record(blocks, body)
        message = anthropic_shape.message_object(body, reply, blocks, usage)
        if dropped:
            message["input_transformations"] = dropped
        sent = send_usage(message, reply)
        if body.get("stream") is True:
            return 200, {**SSE_HEADERS, **reply.headers}, anthropic_shape.message_events(message, given_usage=sent)
        return 200, {**JSON_HEADERS, **reply.headers}, _dumps(message)

    def _chat(self, raw: bytes) -> HandlerResult:
        try:
            body, reply = self._ask(raw, validate_chat_request)
        except Answered as answered:
            return answered.result
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:29]}"
        created = int(time.time())
        usage = self.usage(body, reply)
        usage_json = {
            "prompt_tokens": usage["input"],
            "completion_tokens": usage["output"],
            "total_tokens": usage["input"] + usage["output"],
            "prompt_tokens_details": {"cached_tokens": usage["cached"], "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": usage["reasoning"],
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        finish_reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        headers = {**JSON_HEADERS, **reply.headers}
        if body.get("stream") is True:
            options = body.get("stream_options") or {}
            sent = usage_json if reply.sent_usage is SentUsage.COUNTED else reply.sent_usage
            chunks = self._stream(
                reply,
                completion_id=completion_id,
                created=created,
                model=reply.model or body["model"],
                finish_reason=finish_reason,
                usage=sent,
                include_usage=bool(options.get("include_usage")) and sent is not SentUsage.OMITTED,
            )
            return 200, {**SSE_HEADERS, **reply.headers}, chunks

        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content,
            "refusal": None,
            "annotations": [],
        }
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                for call in reply.tool_calls
            ]
        completion = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": reply.model or body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
            "usage": usage_json,
            "service_tier": "default",
            "system_fingerprint": None,
        }
        send_usage(completion, reply)
        return 200, headers, _dumps(completion)

    @staticmethod
    def _stream(
        reply: Reply,
        *,
        completion_id: str,
        created: int,
        model: str,
        finish_reason: str,
        usage: Any,
        include_usage: bool,
    ) -> Iterator[bytes]:
        """Yield SSE events shaped like the API's ``chat.completion.chunk`` stream."""

        def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> bytes:
            payload: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "service_tier": "default",
                "system_fingerprint": None,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            # With include_usage the API sends "usage": null on every chunk but the last.
            if include_usage:
                payload["usage"] = usage if delta is None else None
            return b"data: " + _dumps(payload) + b"\n\n"

        has_content = reply.content is not None
        yield chunk({"role": "assistant", "content": "" if has_content else None, "refusal": None})
        for piece in split_text(reply.content or "", CONTENT_PIECE):
            yield chunk({"content": piece})
        for index, call in enumerate(reply.tool_calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            for piece in split_text(call.arguments, ARGUMENTS_PIECE):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, finish_reason)
        if include_usage:
            yield chunk(None)
        yield b"data: [DONE]\n\n"
