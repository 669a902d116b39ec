"""Chat Completions: the API of OpenAI and of every OpenAI-compatible server, through the official SDK.

Requests go out as the JSON the turn already holds, through the SDK's own client (authentication, retries,
time-outs, error types) and its plain ``post``; answers are read from the JSON the endpoint sent, not from
the SDK's unvalidated objects, so a ``"message": null``, a call without a name or a body that is not JSON
becomes a ``ModelError`` before anything of it is stored. Missing call ids are left empty: storage gives
every call a usable, unique id.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from ...conf import toolcalling_settings
from ...exceptions import ModelError
from .. import _reading as read
from .._base import DeltaCallback, Features, ModelReply, invalid, tool_input_of
from .._messages import (
    FilePart,
    HistoryMessage,
    ImagePart,
    ModelRequest,
    RequestedCall,
    TextPart,
    UserMessage,
)
from ._clients import OpenAIPostedAPI

PATH = "/chat/completions"


class ChatCompletions(OpenAIPostedAPI):
    """Sends one Chat Completions request and returns a validated ``ModelReply``; errors become ``ModelError``."""

    features = Features(refuses_reasoning_model_tools=True)
    path = PATH

    def request_body(self, request: ModelRequest) -> tuple[dict[str, Any], Any]:
        body = request_body(request)
        return body, self.request_options(body)

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return streamed(body)

    def reply(self, data: Any, model: str) -> ModelReply:
        return reply_from_completion(data, model)

    def assembler(self, model: str, on_delta: DeltaCallback) -> StreamAssembler:
        return StreamAssembler(model, on_delta)

    def status_hint(self, message: str) -> str:
        """An error status that sends the site to ``/v1/responses`` (OpenAI's reasoning models refuse function
        tools on Chat Completions) says which setting changes that."""
        if "/v1/responses" not in message:
            return ""
        return " " + _(
            'This model needs the Responses API: set TOOLCALLING["API"] (or the assistant\'s api) to "responses".'
        )


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of ``request``, the SDK's options still in it."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": to_chat(request.messages),
        **toolcalling_settings.MODEL_OPTIONS,
        **request.options,
    }
    if request.tools:
        body["tools"] = request.tools
    return body


def to_chat(messages: list[HistoryMessage]) -> list[dict[str, Any]]:
    """The history as Chat Completions messages: an answer with its ``tool_calls`` (its content ``null``
    beside them when it has no text), a result as the ``tool`` message of its call, a user's files as parts
    after the text. Nothing of ``provider_items`` or ``is_error`` goes out: the API has no field for them (a
    failed call's text says it failed)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            out.append({"role": "tool", "tool_call_id": message.call_id, "content": message.text})
        elif message.role == "assistant":
            if message.calls:
                calls = [{"id": call.id, "type": "function",
                          "function": {"name": call.name, "arguments": call.arguments or "{}"}}
                         for call in message.calls]  # fmt: skip
                out.append({"role": "assistant", "content": message.text or None, "tool_calls": calls})
            else:
                out.append({"role": "assistant", "content": message.text})
        elif message.role == "user":
            out.append({"role": "user", "content": chat_content(message)})
        else:
            out.append({"role": "system", "content": message.text})
    return out


def chat_content(message: UserMessage) -> str | list[dict[str, Any]]:
    """A user message's content: its text alone, or its text and files as parts."""
    if not message.parts:
        return message.text
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            image = {"url": part.url} if part.detail == "auto" else {"url": part.url, "detail": part.detail}
            parts.append({"type": "image_url", "image_url": image})
        elif isinstance(part, FilePart):
            parts.append({"type": "file", "file": {"filename": part.filename, "file_data": part.data_url}})
    return parts


def streamed(body: dict[str, Any]) -> dict[str, Any]:
    """The body of a streamed request, with usage in its last chunk."""
    return {**body, "stream": True, "stream_options": {"include_usage": True}}


# Reading answers ----------------------------------------------------------------------------------------


def reply_from_completion(data: Any, requested_model: str) -> ModelReply:
    """A ``chat.completion`` object (parsed JSON) as a ``ModelReply``."""
    data = read.json_object(data, "the body")
    _raise_error_body(data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise invalid("it has no choices")
    choice = read.json_object(choices[0], "choices[0]")
    message = read.json_object(choice.get("message"), "choices[0].message")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise invalid("message.tool_calls is not a list")
    content = read.answer_text(read.text(message.get("content"), "message.content"),
                               read.text(message.get("refusal"), "message.refusal"), bool(calls),
                               "the message has neither text nor tool calls")  # fmt: skip
    return ModelReply(
        content=content,
        tool_calls=[_call(item, f"message.tool_calls[{n}]") for n, item in enumerate(calls)],
        usage=read.usage(data.get("usage"), "prompt_tokens", "completion_tokens"),
        model=read.string(data.get("model")) or requested_model,
        finish_reason=read.string(choice.get("finish_reason")) or None,
    )


class StreamAssembler:
    """Builds a ``ModelReply`` from ``chat.completion.chunk`` events (parsed JSON), text and call arguments
    arriving in pieces. ``finish()`` refuses a stream that never carried a choice."""

    def __init__(self, requested_model: str, on_delta: DeltaCallback) -> None:
        self.reply = ModelReply(content=None, model=requested_model, usage=read.unknown_usage())
        self.on_delta = on_delta
        self.tool_input = tool_input_of(on_delta)
        self.shown: dict[int, int] = {}  # per call (its index): how many argument pieces went to ``tool_input``
        self.text: list[str] = []
        self.refusal: list[str] = []
        # Pieces are kept in lists and joined once: a long answer is assembled in time linear in its length.
        # A call is keyed by its index in the stream and its place among the calls (several may share an index).
        self.calls: dict[tuple[int, int], dict[str, list[str]]] = {}
        self.latest: dict[int, tuple[int, int]] = {}  # each index's call that its next pieces belong to
        self.chunks = 0

    def feed(self, data: Any) -> None:
        chunk = read.json_object(data, "a stream chunk")
        _raise_error_body(chunk)
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise invalid("a stream chunk's choices is not a list")
        if chunk.get("usage"):
            self.reply.usage = read.usage(chunk["usage"], "prompt_tokens", "completion_tokens")
        self.reply.model = read.string(chunk.get("model")) or self.reply.model
        for choice in choices:
            self.chunks += 1
            choice = read.json_object(choice, "a stream choice")
            delta = read.json_object(choice.get("delta"), "a stream choice's delta")
            content = read.text(delta.get("content"), "delta.content")
            if content:
                self.text.append(content)
                self.on_delta(content)
            refusal = read.text(delta.get("refusal"), "delta.refusal")
            if refusal:
                self.refusal.append(refusal)
            self._add_calls(delta.get("tool_calls"))
            if choice.get("finish_reason"):
                self.reply.finish_reason = read.string(choice["finish_reason"])

    def finish(self) -> ModelReply:
        if not self.chunks:
            raise invalid("the stream carried no answer (is it a stream of server-sent events?)")
        calls = [{key: "".join(parts) for key, parts in self.calls[index].items()} for index in sorted(self.calls)]
        content = read.answer_text("".join(self.text) if self.text else None,
                                   "".join(self.refusal) if self.refusal else None, bool(calls),
                                   "the stream ended with neither text nor tool calls")  # fmt: skip
        for n, call in enumerate(calls):
            if not call["name"]:
                raise invalid(f"streamed tool call {n} has no name")
        self.reply.content = content
        self.reply.tool_calls = [RequestedCall(**call) for call in calls]
        return self.reply

    def _add_calls(self, parts: Any) -> None:
        if parts is None:
            return
        if not isinstance(parts, list):
            raise invalid("delta.tool_calls is not a list")
        for position, part in enumerate(parts):
            part = read.json_object(part, "a streamed tool call")
            index = part.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool):
                raise invalid("a streamed tool call's index is not a number")
            call_id = read.string(part.get("id"))
            key = self.latest.get(index)
            # Ollama streams each of several parallel calls whole under index 0, each with its own id
            # (ollama/ollama#15457, #16212; tests/integrity/test_compatible_streams.py): an id other than the
            # one its index has is the next call, not more of that one.
            if key is None or (call_id and self.calls[key]["id"] and self.calls[key]["id"] != [call_id]):
                key = self.latest[index] = (index, len(self.calls))
                self.calls[key] = {"id": [], "name": [], "arguments": []}
            slot = self.calls[key]
            if call_id:
                slot["id"] = [call_id]
            function = part.get("function")
            if function is not None:
                function = read.json_object(function, "a streamed tool call's function")
                name = read.text(function.get("name"), "function.name") or ""
                # vLLM repeats the whole name in every delta of a call (the recorded exchange
                # tests/contract/fixtures/chat_completions/vllm_streamed_call_repeats_its_name_without_id.json);
                # OpenAI sends it once, and servers that split it send pieces that differ from the name so far.
                if not (slot["name"] and name == "".join(slot["name"])):
                    slot["name"].append(name)
                slot["arguments"].append(read.arguments(function.get("arguments")))
            self._show(index, slot)

    def _show(self, index: int, slot: dict[str, list[str]]) -> None:
        """The call's argument pieces not shown yet, once its id and name are known (a piece that came first
        goes with the next)."""
        if self.tool_input is None or not slot["id"] or not slot["name"]:
            return
        shown = self.shown.get(index, 0)
        piece = "".join(slot["arguments"][shown:])
        self.shown[index] = len(slot["arguments"])
        if piece:
            self.tool_input(slot["id"][0], "".join(slot["name"]), piece)


def _raise_error_body(data: dict[str, Any]) -> None:
    """An error object in place of a completion (some servers send it with status 200, or mid-stream: OpenRouter's
    mid-stream error chunk carries an empty choice beside it, as recorded in
    tests/contract/fixtures/chat_completions/openrouter_error_chunk_mid_stream.json)."""
    error = data.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise ModelError(_("The model endpoint answered with an error: %(message)s") % {"message": message})


def _call(item: Any, where: str) -> RequestedCall:
    item = read.json_object(item, where)
    function = read.json_object(item.get("function"), f"{where}.function")
    name = read.text(function.get("name"), f"{where}.function.name")
    if not name:
        raise invalid(f"{where} has no function name")
    return RequestedCall(id=read.string(item.get("id")), name=name, arguments=read.arguments(function.get("arguments")))
