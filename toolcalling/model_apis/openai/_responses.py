"""The OpenAI Responses API, stateless: the whole history goes out from the site's database on every request.

Nothing is kept at the provider (``store: false``, never ``previous_response_id``). An answer's output items are
stored as the API issued them (``ModelReply.provider_items``: reasoning with its encrypted content, messages and
function calls with their ids) and sent back in the same order with the same ids, since the API pairs a
reasoning item with the item issued right after it by that id: a reasoning item without that item is refused
("was provided without its required following item"), and so is an item id without its reasoning ("was provided
without its required 'reasoning' item"). Where part of an answer is gone (a call the history no longer holds, an
answer stored before its items were), the reasoning that needed it is left out with the ids that depended on it,
and the rest goes out without ids, which the API accepts. The request is built from the turn's Chat
Completions-shaped messages; answers are read from the JSON the endpoint sent, validated as strictly as Chat
Completions' (anything malformed is a ``ModelError`` before anything of it is stored).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from ...conf import toolcalling_settings
from ...exceptions import ModelError
from .. import _reading as read
from .._base import DeltaCallback, ModelReply, invalid, tool_input_of
from .._converting import function_of, no_parameters
from .._messages import (
    AssistantMessage,
    FilePart,
    HistoryMessage,
    ImagePart,
    ModelRequest,
    RequestedCall,
    TextPart,
    UserMessage,
)
from ._clients import OpenAIPostedAPI

PATH = "/responses"

# OpenAI's reasoning models, which refuse function tools on Chat Completions ("Please use /v1/responses").
RESPONSES_ONLY_PREFIXES = ("gpt-5", "o3", "o4")

# Chat Completions options that the Responses API names differently; the others go out as they are.
RENAMED_OPTIONS = {"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens"}


def needs_responses(model: str) -> bool:
    """Whether OpenAI serves ``model``'s function tools only on the Responses API."""
    return model.startswith(RESPONSES_ONLY_PREFIXES)


class Responses(OpenAIPostedAPI):
    """Sends one Responses request and returns a validated ``ModelReply``; errors become ``ModelError``."""

    path = PATH

    def request_body(self, request: ModelRequest) -> tuple[dict[str, Any], Any]:
        body = request_body(request)
        return body, self.request_options(body)

    def reply(self, data: Any, model: str) -> ModelReply:
        return reply_from_response(data, model)

    def assembler(self, model: str, on_delta: DeltaCallback) -> EventAssembler:
        return EventAssembler(model, on_delta)


# Building requests --------------------------------------------------------------------------------------


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of ``request`` in the Responses form, the SDK's options still in it."""
    instructions, items = to_input(request.messages, request.model)
    body: dict[str, Any] = {"model": request.model}
    if instructions is not None:
        body["instructions"] = instructions
    if request.tools:
        body["tools"] = [function_tool(tool) for tool in request.tools]
    body["input"] = items
    body.update(store=False, include=["reasoning.encrypted_content"])
    body.update(options_for_responses({**toolcalling_settings.MODEL_OPTIONS, **request.options}))
    return body


def to_input(messages: list[HistoryMessage], model: str | None = None) -> tuple[str | None, list[dict[str, Any]]]:
    """The history as ``instructions`` (the leading system message) and Responses input items.

    An answer becomes the items it was issued as (``assistant_items``); a result the ``function_call_output``
    of its call; a later system message a ``system`` message item. ``model``: the model the request goes to."""
    instructions: str | None = None
    items: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        if message.role == "tool":
            items.append({"type": "function_call_output", "call_id": message.call_id, "output": message.text})
        elif message.role == "assistant":
            items.extend(assistant_items(message, model))
        elif message.role == "user":
            items.append({"type": "message", "role": "user", "content": _input_content(message)})
        elif n == 0:
            instructions = message.text
        else:
            items.append({"type": "message", "role": "system", "content": message.text})
    return instructions, items


# The output items the app sends back; those of built-in tools it never offers are not stored.
ITEM_TYPES = ("reasoning", "message", "function_call")
# Stored with the items of an answer that has reasoning, never sent: the model it was issued to. Only that model
# can read its reasoning's encrypted content (another answers ``invalid_encrypted_content``: openai/codex #17541).
ISSUED_TO = "issued_to"


def assistant_items(message: AssistantMessage, model: str | None = None) -> list[dict[str, Any]]:
    """An answer as the output items it was issued as, in their order and with their ids; each function call
    with the arguments the history holds (an approver may have edited them), a call the history no longer
    holds left out. Without stored items (another API's answer, one stored before items were kept, or one
    issued to a model other than ``model``), its text and calls go out as new items, without ids. ``paired``
    then keeps only what the API accepts."""
    stored: list[dict[str, Any]] = message.provider_items
    last = stored[-1] if stored else None  # where the reply put it
    if model is not None and last is not None and last.get("type") == ISSUED_TO and last.get("model") != model:
        stored = []
    calls = {call.id: {"type": "function_call", "call_id": call.id, "name": call.name,
                       "arguments": call.arguments or "{}"} for call in message.calls}  # fmt: skip
    issued = [item for item in stored if item.get("type") in ITEM_TYPES]
    out: list[tuple[int | None, dict[str, Any]]] = []
    for n, item in enumerate(issued):
        if item["type"] == "function_call":
            call = calls.pop(item.get("call_id", ""), None)
            if call is not None:
                out.append((n, {**item, **call}))
        else:
            out.append((n, item))
    if message.text and not any(item["type"] == "message" for item in issued):
        out.append((None, {"type": "message", "role": "assistant", "content": message.text}))
    out.extend((None, call) for call in calls.values())
    return paired(issued, out)


def paired(issued: list[dict[str, Any]], out: list[tuple[int | None, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The items of ``out`` (each with its index in ``issued``, or ``None`` for a new one) as the API accepts
    them: a reasoning item only with its encrypted content and right before the item issued right after it
    (which the API finds by its id); an item's id only beside the reasoning issued before it, which the API
    requires of it. What falls out is the reasoning of an answer part of which is gone: the model reads the
    rest without it, as after a change of model."""
    kept: list[tuple[int | None, dict[str, Any]]] = []
    kept_reasoning: set[int] = set()
    for n, item in reversed(out):  # from the end: whether a reasoning item stays depends on what follows it
        if item.get("type") == "reasoning" and n is not None:
            follower = issued[n + 1].get("id") if n + 1 < len(issued) else None
            after = kept[-1][1] if kept else None
            if item.get("encrypted_content") and follower and after is not None and after.get("id") == follower:
                kept_reasoning.add(n)
                kept.append((n, item))
            continue
        kept.append((n, item))
    owner: dict[int, int] = {}  # issued index -> the index of the reasoning issued before it
    last: int | None = None
    for n, item in enumerate(issued):
        if item.get("type") == "reasoning":
            last = n
        elif last is not None:
            owner[n] = last
    items = []
    for n, item in reversed(kept):
        if n is not None and item.get("type") != "reasoning" and n in owner and owner[n] not in kept_reasoning:
            item = {key: value for key, value in item.items() if key != "id"}
        items.append(item)
    return items


def _input_content(message: UserMessage) -> Any:
    """A user message's content: its text alone, or its text and files as Responses input parts."""
    if not message.parts:
        return message.text
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": message.text}] if message.text else []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            parts.append({"type": "input_image", "image_url": part.url, "detail": part.detail})
        elif isinstance(part, FilePart):
            parts.append({"type": "input_file", "filename": part.filename, "file_data": part.data_url})
    return parts


def function_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool definition as a Responses function tool. ``strict`` is said outright: the
    Responses API takes a missing one as true, which Chat Completions does not."""
    function = function_of(tool)
    if function is None:
        return tool
    converted: dict[str, Any] = {"type": "function", "name": function.get("name")}
    if "description" in function:
        converted["description"] = function["description"]
    converted["parameters"] = function.get("parameters", no_parameters())
    converted["strict"] = bool(function.get("strict", False))
    return converted


def options_for_responses(options: dict[str, Any]) -> dict[str, Any]:
    """Chat Completions-named options (``response_format``, ``reasoning_effort``, ``max_tokens``,
    ``tool_choice``) in their Responses form; ``model_options`` already in that form pass through."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "response_format":
            out["text"] = {**out.get("text", {}), "format": text_format(value)}
        elif key == "reasoning_effort":
            out["reasoning"] = {**out.get("reasoning", {}), "effort": value}
        elif key == "tool_choice" and isinstance(value, dict) and "function" in value:
            out["tool_choice"] = {"type": "function", "name": value["function"].get("name")}
        elif key in ("text", "reasoning") and isinstance(value, dict):
            out[key] = {**out.get(key, {}), **value}
        else:
            out[RENAMED_OPTIONS.get(key, key)] = value
    return out


def text_format(response_format: Any) -> Any:
    """``response_format`` as ``text.format``: the ``json_schema`` object's fields move up one level."""
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        return {"type": "json_schema", **(response_format.get("json_schema") or {})}
    return response_format


# Reading answers ----------------------------------------------------------------------------------------


def reply_from_response(data: Any, requested_model: str) -> ModelReply:
    """A ``response`` object (parsed JSON) as a ``ModelReply``: its text, function calls and reasoning items."""
    data = read.json_object(data, "the body")
    _raise_error_body(data)
    output = data.get("output")
    if not isinstance(output, list):
        raise invalid("the response has no output list")
    text: list[str] = []
    refusals: list[str] = []
    calls: list[RequestedCall] = []
    issued: list[dict[str, Any]] = []
    for n, item in enumerate(output):
        item = read.json_object(item, f"output[{n}]")
        kind = item.get("type")
        if kind == "message":
            parts = item.get("content")
            if not isinstance(parts, list):
                raise invalid(f"output[{n}].content is not a list")
            for m, part in enumerate(parts):
                part = read.json_object(part, f"output[{n}].content[{m}]")
                if part.get("type") == "refusal":
                    refusals.append(read.text(part.get("refusal"), f"output[{n}].content[{m}].refusal") or "")
                else:
                    text.append(read.text(part.get("text"), f"output[{n}].content[{m}].text") or "")
        elif kind == "function_call":
            calls.append(_call(item, f"output[{n}]"))
        elif not isinstance(kind, str):
            raise invalid(f"output[{n}] has no type")
        if kind in ITEM_TYPES:
            issued.append(item)
        # Other item types belong to built-in tools the app never offers; they carry nothing to store.
    if any(item.get("type") == "reasoning" for item in issued):
        issued.append({"type": ISSUED_TO, "model": requested_model})
    content = read.answer_text("".join(text) if text else None, "".join(refusals) if refusals else None,
                               bool(calls), "the response has neither text nor function calls")  # fmt: skip
    return ModelReply(
        content=content,
        tool_calls=calls,
        usage=read.usage(data.get("usage"), "input_tokens", "output_tokens"),
        model=read.string(data.get("model")) or requested_model,
        finish_reason=_finish_reason(data, calls),
        provider_items=issued,
    )


class EventAssembler:
    """Builds a ``ModelReply`` from the Responses event stream: text deltas go to ``on_delta`` as they come, the
    answer is read from ``response.completed`` (with the items of ``response.output_item.done`` when that
    carries no output). ``finish()`` refuses a stream that never completed."""

    def __init__(self, requested_model: str, on_delta: DeltaCallback) -> None:
        self.requested_model = requested_model
        self.on_delta = on_delta
        self.tool_input = tool_input_of(on_delta)
        self.calls: dict[int, tuple[str, str]] = {}  # function calls being written: (call id, name) by output index
        self.items: dict[int, dict[str, Any]] = {}
        self.final: dict[str, Any] | None = None

    def feed(self, data: Any) -> None:
        event = read.json_object(data, "a stream event")
        kind = event.get("type")
        if kind == "response.output_text.delta":
            delta = read.text(event.get("delta"), "a text delta")
            if delta:
                self.on_delta(delta)
        elif kind == "response.output_item.added" and self.tool_input is not None:
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                call_id, name = read.string(item.get("call_id")), read.string(item.get("name"))
                if call_id and name and isinstance(event.get("output_index"), int):
                    self.calls[event["output_index"]] = (call_id, name)
        elif kind == "response.function_call_arguments.delta" and self.tool_input is not None:
            call = self.calls.get(event.get("output_index"))  # type: ignore[arg-type]
            piece = event.get("delta")
            if call is not None and isinstance(piece, str) and piece:
                self.tool_input(call[0], call[1], piece)
        elif kind == "response.output_item.done":
            index = event.get("output_index", len(self.items))
            if not isinstance(index, int) or isinstance(index, bool):
                raise invalid("an output item's output_index is not a number")
            self.items[index] = read.json_object(event.get("item"), "a finished output item")
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = read.json_object(event.get("response"), f"the response of {kind}")
        elif kind == "error":
            message = event.get("message") or (event.get("error") or {}).get("message")
            raise ModelError(_("The model endpoint answered with an error: %(message)s") % {"message": message})

    def finish(self) -> ModelReply:
        if self.final is None:
            raise invalid("the stream ended before the response completed (is it a stream of server-sent events?)")
        final = self.final
        if not final.get("output") and self.items:
            final = {**final, "output": [self.items[index] for index in sorted(self.items)]}
        return reply_from_response(final, self.requested_model)


def _raise_error_body(data: dict[str, Any]) -> None:
    """An error object in place of a response, or a response that failed."""
    error = data.get("error")
    if error or data.get("status") == "failed":
        message = error.get("message") if isinstance(error, dict) else error
        raise ModelError(_("The model endpoint answered with an error: %(message)s") % {"message": message})


def _call(item: dict[str, Any], where: str) -> RequestedCall:
    name = read.text(item.get("name"), f"{where}.name")
    if not name:
        raise invalid(f"{where} has no function name")
    return RequestedCall(
        id=read.string(item.get("call_id")), name=name, arguments=read.arguments(item.get("arguments"))
    )


def _finish_reason(data: dict[str, Any], calls: list[RequestedCall]) -> str:
    """Chat Completions' finish reason for the response's status, as the rest of the app knows them."""
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if calls else "stop"
