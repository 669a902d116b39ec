"""Contract fixtures from recorded real exchanges: what the real APIs (and the OpenAI-compatible servers the app
claims to support) accepted, refused and answered, each fixture naming where its shape was observed.

Two checks per fixture, so that neither the adapters nor the strict test server is checked only against the
beliefs both were written from:

- the strict server's validator accepts every request the real API accepted (the earlier exchanges of a follow-up
  too, with what the server would have issued in their answers), and refuses each refused one with the real
  API's error text;
- the adapter reads every recorded answer (a body, or the events of a stream) into what ``expect`` says.

A fixture (``fixtures/<api>/<name>.json``) holds ``source``, ``api``, ``what``, optional ``earlier`` exchanges
(``request`` and ``response``/``events``) that the request follows up on, then the ``request`` (``null`` when the
source recorded only the answer) with either ``refused`` (``status``, ``message``) or the answer and ``expect``;
``extensions`` lists the request parameters of a compatible server's own (OpenRouter's ``usage``, ...).

Fixtures hold shapes, not whole recordings: long texts end in `` [...]``, encrypted content and signatures keep
their first and last characters (the same in an answer and in the request that replays it), a response object
keeps the keys an adapter reads, and in a long stream a run of like deltas keeps its first five and its last
(argument pieces are kept whole, so they still add up).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolcalling.exceptions import ModelError
from toolcalling.model_apis import _reading as read
from toolcalling.model_apis._base import ModelReply
from toolcalling.model_apis.anthropic import _reading as _anthropic_reading
from toolcalling.model_apis.openai import _chat_completions, _responses
from toolcalling.testing import validate_chat_request, validate_messages_request, validate_responses_request
from toolcalling.testing.rules_anthropic import IssuedThinking
from toolcalling.testing.rules_responses import Issued

FIXTURES = Path(__file__).parent / "fixtures"
APIS = ("chat_completions", "responses", "anthropic")

# Fixtures whose check fails on today's code because the adapter or a Responses/Anthropic rule is wrong: the
# check is kept as it should be; the reason says what differs from the recorded exchange.
SERVER_XFAIL: dict[str, str] = {}
ADAPTER_XFAIL: dict[str, str] = {}


def load(path: Path) -> dict[str, Any]:
    fixture: dict[str, Any] = json.loads(path.read_text())
    return fixture


def fixture_paths() -> list[Path]:
    return sorted(path for api in APIS for path in (FIXTURES / api).glob("*.json"))


def params(marks: dict[str, str], keep: Callable[[dict[str, Any]], bool]) -> list[Any]:
    chosen = []
    for path in fixture_paths():
        if not keep(load(path)):
            continue
        name = f"{path.parent.name}/{path.stem}"
        mark = [pytest.mark.xfail(strict=True, reason=marks[name])] if name in marks else []
        chosen.append(pytest.param(path, id=name, marks=mark))
    return chosen


# --- the strict server ------------------------------------------------------------------------------------


def answer_of(exchange: dict[str, Any]) -> dict[str, Any]:
    """The answer of an exchange as one object: its body, or the response its stream ended with."""
    if "response" in exchange:
        response: dict[str, Any] = exchange["response"]
        return response
    events = exchange["events"]
    finals = [e["response"] for e in events if e.get("type") in ("response.completed", "response.incomplete")]
    if finals:
        final: dict[str, Any] = finals[-1]
        return final
    message = next(e["message"] for e in events if e.get("type") == "message_start")
    blocks = {e["index"]: dict(e["content_block"]) for e in events if e.get("type") == "content_block_start"}
    for event in events:
        delta = event.get("delta") or {}
        if event.get("type") == "content_block_delta" and delta.get("type") in ("thinking_delta", "signature_delta"):
            key = delta["type"].removesuffix("_delta")
            blocks[event["index"]][key] = blocks[event["index"]].get(key, "") + delta[key]
    return {**message, "content": [blocks[index] for index in sorted(blocks)]}


class Server:
    """One API's validator with what the strict server would have issued in the answers seen so far."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.issued = Issued()
        self.thinking = IssuedThinking()

    def validate(self, body: Any) -> list[str]:
        if self.api == "chat_completions":
            return validate_chat_request(body)
        if self.api == "responses":
            return validate_responses_request(body, self.issued)
        return validate_messages_request(body, self.thinking)

    def saw(self, exchange: dict[str, Any]) -> None:
        """Remember what an exchange's answer issued, as the server does when it sends one (backend.py)."""
        if self.api == "chat_completions":
            return  # nothing of an answer must come back verbatim
        answer = answer_of(exchange)
        if self.api == "responses":
            self.issued.record(answer.get("output") or [])
        elif self.api == "anthropic":
            self.thinking.record(answer.get("content") or [])


def own_part(fixture: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """A request without the parameters of a compatible server's own (``extensions``), which the API the strict
    server mirrors does not know."""
    return {key: value for key, value in request.items() if key not in fixture.get("extensions", ())}


@pytest.mark.parametrize("path", params(SERVER_XFAIL, lambda fixture: fixture.get("request") is not None))
def test_the_strict_server_accepts_what_the_api_accepted_and_refuses_what_it_refused(path):
    fixture = load(path)
    server = Server(fixture["api"])
    for n, exchange in enumerate(fixture.get("earlier", [])):
        assert server.validate(own_part(fixture, exchange["request"])) == [], f"earlier[{n}]"
        server.saw(exchange)
    errors = server.validate(own_part(fixture, fixture["request"]))
    if "refused" in fixture:
        message = fixture["refused"]["message"]
        assert any(message in error for error in errors), errors
    else:
        assert errors == []


# --- the adapters -----------------------------------------------------------------------------------------

READERS: dict[str, tuple[Callable[[Any, str], ModelReply], Callable[..., read.Assembler]]] = {
    "chat_completions": (_chat_completions.reply_from_completion, _chat_completions.StreamAssembler),
    "responses": (_responses.reply_from_response, _responses.EventAssembler),
    "anthropic": (_anthropic_reading.reply_from_message, _anthropic_reading.EventAssembler),
}


def reading(api: str, exchange: dict[str, Any]) -> tuple[ModelReply, str | None]:
    """The adapter's reply to an exchange's answer, and the text it streamed (``None`` for a body)."""
    parse, assembler = READERS[api]
    if "response" in exchange:
        return parse(exchange["response"], "requested-model"), None
    deltas: list[str] = []
    stream = assembler("requested-model", deltas.append)
    for event in exchange["events"]:
        if not read.feed_line(stream, "data: " + json.dumps(event)):
            break
    return stream.finish(), "".join(deltas)


def arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def observed(reply: ModelReply, streamed: str | None, expect: dict[str, Any]) -> dict[str, Any]:
    """What the adapter read, in the keys ``expect`` names."""
    seen: dict[str, Any] = {
        "content": reply.content,
        "calls": [{"id": c.id, "name": c.name, "arguments": arguments(c.arguments)} for c in reply.tool_calls],
        "usage": {key: getattr(reply.usage, key) for key in expect.get("usage", {})},
        "finish_reason": reply.finish_reason,
        "reasoning": [item.get("type") for item in reply.reasoning],
        "model": reply.model,
        "streamed": streamed,
    }
    return {key: seen[key] for key in expect}


@pytest.mark.parametrize("path", params(ADAPTER_XFAIL, lambda fixture: "refused" not in fixture))
def test_the_adapter_reads_the_recorded_answer(path):
    fixture = load(path)
    for exchange in fixture.get("earlier", []):
        reading(fixture["api"], exchange)  # an earlier answer is read without an error too
    expect = fixture["expect"]
    if "error" in expect:
        with pytest.raises(ModelError) as caught:
            reading(fixture["api"], fixture)
        assert expect["error"] in str(caught.value)
        return
    reply, streamed = reading(fixture["api"], fixture)
    assert expect
    assert observed(reply, streamed, expect) == expect


def test_every_fixture_names_its_source_and_says_what_it_shows():
    paths = fixture_paths()
    assert len(paths) >= 30
    for path in paths:
        fixture = load(path)
        assert fixture["api"] == path.parent.name, path.name
        assert fixture["source"] and fixture["what"] != "TODO", path.name
        assert ("refused" in fixture) != ("expect" in fixture), path.name
