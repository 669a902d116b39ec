"""Strict readers of a model API's JSON answer: each names where a value that is not what it must be sits, so
a malformed answer becomes a ``ModelError`` (``invalid``) before anything of it is stored."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterable, Callable, Iterable
from typing import Any, Protocol, cast

import httpx2

from ._base import DeltaCallback, ModelReply, Usage, invalid


def parse_json(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        preview = raw[:60] if isinstance(raw, str) else raw[:60].decode("utf-8", "replace")
        raise invalid(f"the body is not JSON ({preview!r})")


def arguments(value: Any) -> str:
    """Argument text; some servers send an object instead of JSON text, which is the same thing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    raise invalid("tool call arguments are neither text nor an object")


# A message's token columns are 32-bit integers on every database: a count above this (no answer comes near it)
# is refused, with room for the sum of two counts (a total the usage object leaves out) to fit as well.
MAX_COUNT = (2**31 - 1) // 2


def count(value: Any, *, total: bool = False) -> int | None:
    """A token count as the usage object gives it; ``None`` for anything that is no count (missing, ``null``,
    negative, a float, a string, a boolean), an absurd one refused (``total``: a sum of two counts, which may be
    twice as large)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    limit = 2 * MAX_COUNT if total else MAX_COUNT
    if value > limit:
        raise invalid(f"a token count in usage is out of range (more than {limit})")
    return value


def detail(usage: dict[str, Any], group: str, key: str) -> int:
    """A count inside one of usage's ``*_details`` objects (absent on many servers, or ``null``): what is not a
    count there is none (they are parts of the input or output, which are priced as the whole is)."""
    details = usage.get(group)
    return (count(details.get(key)) or 0) if isinstance(details, dict) else 0


def unknown_usage() -> Usage:
    """The usage of an answer until its usage is read (a stream carries it last, if it carries it at all)."""
    return Usage(known=False)


def usage(value: Any, input_key: str, output_key: str) -> Usage:
    """The usage object of an OpenAI API: input and output under the names given (``prompt_tokens`` /
    ``completion_tokens``, ``input_tokens`` / ``output_tokens``), each with its ``*_details`` beside it.

    Without both counts (usage missing, ``null``, or a count that is none: see ``count``) it is unknown. A total
    missing, malformed or below its parts is their sum (a total above them is the endpoint's to say)."""
    if not isinstance(value, dict):
        return unknown_usage()
    prompt, completion = count(value.get(input_key)), count(value.get(output_key))
    if prompt is None or completion is None:
        return unknown_usage()
    total = count(value.get("total_tokens"), total=True) or 0
    reasoning = detail(value, f"{output_key}_details", "reasoning_tokens")
    if reasoning > completion and total >= prompt + completion + reasoning:
        # xAI counts reasoning beside the completion, not in it (its total is all three: the recorded
        # exchange tests/contract/fixtures/chat_completions/xai_tool_call.json); the output is both.
        completion += reasoning
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=max(total, prompt + completion),
        cached_tokens=min(detail(value, f"{input_key}_details", "cached_tokens"), prompt),
        reasoning_tokens=min(reasoning, completion),
    )


def json_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(f"{where} is {'missing' if value is None else 'not an object'}")
    return value


def text(value: Any, where: str) -> str | None:
    """Text, or ``None``; a list of parts (as some servers send) is its text parts joined.

    Mistral puts ``thinking`` parts (a list of their own) before the text parts, in an answer and in a stream's
    deltas (tests/contract/fixtures/chat_completions/mistral_thinking_and_text_content_parts.json): they are
    left out, as the reasoning of every Chat Completions answer is."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        parts = [p for p in value if p.get("type") != "thinking"]
        if all(isinstance(p.get("text"), str) for p in parts):
            return "".join(p["text"] for p in parts)
    raise invalid(f"{where} is not text")


def string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def answer_text(text: str | None, refusal: str | None, has_calls: bool, problem: str) -> str | None:
    """An answer's text: a refusal is the model's answer in words (when there is no other text and no call);
    anything else without text or calls is no answer (``problem`` says so)."""
    if text is None and not has_calls:
        if refusal is None:
            raise invalid(problem)
        return refusal
    return text


def error_message(body: Any) -> str | None:
    """The message of an API's error object (``{"error": {"message": ...}}``, or the object itself)."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return None


class Assembler(Protocol):
    """What reads one API's event stream into a reply, one event (parsed JSON) at a time."""

    def feed(self, data: Any) -> None: ...
    def finish(self) -> ModelReply: ...


def feed_line(assembler: Assembler, line: str) -> bool:
    """Feed one line of a server-sent event stream to ``assembler`` (``data:`` lines carry its events, other
    fields are skipped); ``False`` once ``[DONE]`` ends the stream."""
    if line.startswith("data:"):
        payload = line[5:].strip()
        if payload == "[DONE]":
            return False
        if payload:
            assembler.feed(parse_json(payload))
    return True


def is_json(response: httpx2.Response) -> bool:
    """Whether a server asked to stream sent one JSON body instead (some compatible servers do)."""
    return response.headers.get("content-type", "").startswith("application/json")


def body_reply(raw: bytes, model: str, on_delta: DeltaCallback, parse: Callable[[Any, str], ModelReply]) -> ModelReply:
    """The one JSON body a server sent instead of a stream (``parse`` reads it); its text is one delta."""
    reply = parse(parse_json(raw), model)
    if reply.content:
        on_delta(reply.content)
    return reply


def streamed_reply(response: httpx2.Response, model: str, on_delta: DeltaCallback,
                   parse: Callable[[Any, str], ModelReply], assembler: Assembler) -> ModelReply:  # fmt: skip
    """A streamed answer, or the one JSON body a server sent instead (``parse`` reads it); closed either way."""
    try:
        if is_json(response):
            return body_reply(response.read(), model, on_delta, parse)
        for line in response.iter_lines():
            if not feed_line(assembler, line):
                drain(response)
                break
        return assembler.finish()
    finally:
        response.close()


async def astreamed_reply(response: httpx2.Response, model: str, on_delta: DeltaCallback,
                          parse: Callable[[Any, str], ModelReply], assembler: Assembler) -> ModelReply:  # fmt: skip
    """``streamed_reply`` of an async response, read on the event loop; closed either way (a cancelled read
    too, so its connection is not left half read)."""
    try:
        if is_json(response):
            return body_reply(await response.aread(), model, on_delta, parse)
        async for line in response.aiter_lines():
            if not feed_line(assembler, line):
                await adrain(response)
                break
        return assembler.finish()
    finally:
        await response.aclose()


# What is read of a stream after its ``[DONE]`` at most, bytes and seconds, before its connection is given up.
DRAIN_BYTES = 64 * 1024
DRAIN_SECONDS = 1.0


def drain(response: httpx2.Response) -> None:
    """Read the rest of a stream that said ``[DONE]`` (normally only the end of its chunked body): an HTTP/1.1
    connection goes back to the client's pool only once its response is read to the end, else closing the
    response closes it, and every streamed answer would open a connection (over TLS, a handshake) of its own.
    A server that sends more than ``DRAIN_BYTES`` after it, sends nothing for ``DRAIN_SECONDS``, or fails, only
    loses its connection."""
    if not drainable(response):
        return
    read = 0
    try:
        for chunk in cast(Iterable[bytes], response.stream):
            read += len(chunk)
            if read > DRAIN_BYTES:
                return
    except (httpx2.HTTPError, httpx2.StreamError):
        return  # the answer is whole already; only the connection is lost


async def adrain(response: httpx2.Response) -> None:
    """``drain`` of an async stream, bounded in time as a whole too (``DRAIN_SECONDS``)."""
    if not drainable(response):
        return
    read = 0
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for chunk in cast(AsyncIterable[bytes], response.stream):
                read += len(chunk)
                if read > DRAIN_BYTES:
                    return
    except (httpx2.HTTPError, httpx2.StreamError, TimeoutError):
        return


def drainable(response: httpx2.Response) -> bool:
    """Whether reading the rest of ``response`` keeps its connection (HTTP/1.1, still open; HTTP/2 keeps it when a
    stream is closed); if so, each read of that rest now waits ``DRAIN_SECONDS`` at most instead of the client's
    read time-out (a server holding a stream open after ``[DONE]`` must not delay the answer): the transport takes
    the read time-out from the request's extensions each time the body is read anew."""
    if response.http_version != "HTTP/1.1" or response.is_closed:
        return False
    timeout = dict(response.request.extensions.get("timeout") or {})
    timeout["read"] = DRAIN_SECONDS
    response.request.extensions["timeout"] = timeout
    return True
