"""Anthropic's native Messages API, through the official ``anthropic`` SDK (the ``[anthropic]`` extra).

The request is built from the turn's history (``_messages``): the leading system message becomes ``system``,
an answer's calls ``tool_use`` blocks and results ``tool_result`` blocks of the next user message (in order,
``is_error`` for a failed call). An answer's content blocks are stored in their order
(``ModelReply.provider_items``) and sent back in that order, thinking blocks unchanged where they came: with
interleaved thinking a block may follow text, and the API refuses a latest assistant message whose thinking
blocks moved ("cannot be modified"). ``cache_control`` marks the stable prefix (the last tool, the system
prompt) and the history so far, so the provider's prompt cache serves the next request. On the models with
preserved thinking, which bind each thinking block to what came before it, the request asks the API to drop the
blocks whose prefix the app changed instead of refusing the request (``bind_thinking``). Answers are read from
the JSON the endpoint sent (``_reading``), as strictly as the other APIs'.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar

from ...conf import toolcalling_settings
from .._base import DeltaCallback, ModelReply, missing_sdk
from .._messages import (
    AssistantMessage,
    FilePart,
    HistoryMessage,
    ImagePart,
    ModelRequest,
    TextPart,
    ToolMessage,
    UserMessage,
)

try:
    import anthropic
except ModuleNotFoundError as exc:  # the SDK is the optional extra: the API says so, as it is named
    if exc.name != "anthropic":
        raise
    raise missing_sdk("anthropic", "anthropic", "django-toolcalling[anthropic]") from exc

from .._converting import function_of, no_parameters
from .._posting import PostedModelAPI
from . import _clients as clients
from . import _reading as reading

PATH = "/v1/messages"

# The API requires ``max_tokens``; ``model_options`` (or ``MODEL_OPTIONS``) may set another.
DEFAULT_MAX_TOKENS = 4096

# The blocks of an answer that must go back with it: extended thinking, plain or redacted.
THINKING_TYPES = ("thinking", "redacted_thinking")

# The content blocks of an answer that go back with it; those of server tools the app never offers are not stored.
BLOCK_TYPES = (*THINKING_TYPES, "text", "tool_use")

CACHE_POINT = {"type": "ephemeral"}

# The models with preserved thinking (the "supportedModels" of platform.claude.com's "Prefix checks on thinking
# blocks"): "If the prefix differs from what you sent when the block was produced, that block and every later
# thinking block are invalid, and the API rejects the request with a 400 error or drops the invalid blocks,
# whichever you choose." ("Preserved thinking"). Matched within the id, so platforms' ids and dated ones match too.
PRESERVED_THINKING_MODELS = (
    "claude-fable-5-2",
    "claude-mythos-5-2",
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
# The beta that ``thinking.block_binding`` needs: "That setting requires the `thinking-binding-controls-2026-08-01`
# value in the `anthropic-beta` header." (the API's error, as quoted by apidog.com, "Claude Fable 5.1 Preserved
# Thinking"; "Fix a thinking block bound to a different conversation" names the same header)
BINDING_BETA = "thinking-binding-controls-2026-08-01"

# Chat Completions' tool_choice values in the Messages API's form.
TOOL_CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}


class Anthropic(PostedModelAPI):
    """Sends one Messages request and returns a validated ``ModelReply``; errors become ``ModelError``."""

    price_provider = "anthropic"
    client: anthropic.Anthropic
    path = PATH
    sdk: ClassVar[ModuleType] = anthropic
    sdk_error = anthropic.AnthropicError

    @classmethod
    def build_client(cls) -> anthropic.Anthropic:
        return clients.build_client()

    @classmethod
    def async_client_builder(cls) -> Callable[[], anthropic.AsyncAnthropic] | None:
        return clients.async_builder()

    def request_body(self, request: ModelRequest) -> tuple[dict[str, Any], Any]:
        body = request_body(request)
        return body, self.request_options(body)

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body as the JSON text the SDK would send, given as ``content``: from a ``body`` the SDK's ``post``
        first copies the whole tree (``prepare_request_data``, looking for files to read), every block of the
        history on every request, some 4,000 calls a request at 20 turns of history. Encoded as the SDK's
        encoder does (compact, UTF-8, no NaN); a body JSON cannot encode so (a value only the SDK knows, in
        ``MODEL_OPTIONS``) is left to the SDK."""
        try:
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        except (TypeError, ValueError):
            return super().payload(body)
        return {"content": text}

    def reply(self, data: Any, model: str) -> ModelReply:
        return reading.reply_from_message(data, model)

    def assembler(self, model: str, on_delta: DeltaCallback) -> reading.EventAssembler:
        return reading.EventAssembler(model, on_delta)


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of ``request`` in the Messages form (cache points on the last tool and the system prompt),
    the SDK's options still in it."""
    system, messages = to_messages(request.messages)
    body: dict[str, Any] = {"model": request.model, "max_tokens": DEFAULT_MAX_TOKENS}
    if system:
        body["system"] = [{"type": "text", "text": system, "cache_control": CACHE_POINT}]
    if request.tools:
        tools = [anthropic_tool(tool) for tool in request.tools]
        tools[-1] = {**tools[-1], "cache_control": CACHE_POINT}
        body["tools"] = tools
    body["messages"] = messages
    body.update(options_for_messages({**toolcalling_settings.MODEL_OPTIONS, **request.options}))
    bind_thinking(body)
    return body


def bind_thinking(body: dict[str, Any]) -> None:
    """On a model with preserved thinking, ask the API to drop each thinking block whose prefix changed rather than
    refuse the request (``drop_block`` and its beta header), on every request of the conversation.

    The app changes what came before a block in ways it means to: a memory budget or ``memory = "final"`` leaves out
    earlier turns, instructions are built for each request, tool search offers what it found, an approver edits a
    call's arguments, a structured-output correction stays out of the stored history. Without this the API refuses
    such a request ("The block is bound to a different conversation"), and the stored conversation keeps the change,
    so every later request is refused too ("Sending the same request again can't work, because your history still
    holds what your code changed", "Fix a thinking block bound to a different conversation"). The API judges each
    block: a change invalidates only the thinking after it, so the blocks whose prefix is unchanged stay, and nothing
    the API could keep is lost, where leaving thinking out by the app would lose it all. Sent whether or not the app
    changed anything, since it cannot always know (it is the API that says what counts), and the API keeps the
    setting for no later request (the same page asks for it on every request of the conversation). A request that
    sets no ``thinking`` gets adaptive thinking, which these models do by default (same page); one that turns
    thinking off, or chose a ``prefix_mismatch_behavior`` itself, keeps its choice."""
    model = body.get("model")
    if not (isinstance(model, str) and any(name in model for name in PRESERVED_THINKING_MODELS)):
        return
    thinking = body.get("thinking", {"type": "adaptive"})
    if not isinstance(thinking, dict) or thinking.get("type") == "disabled":
        return
    chosen = thinking.get("block_binding")
    binding = {"prefix_mismatch_behavior": "drop_block", **(chosen if isinstance(chosen, dict) else {})}
    body["thinking"] = {**thinking, "block_binding": binding}
    headers = dict(body.get("extra_headers") or {})
    key = next((name for name in headers if name.lower() == "anthropic-beta"), "anthropic-beta")
    betas = [beta.strip() for beta in str(headers.get(key) or "").split(",") if beta.strip()]
    headers[key] = ",".join(betas if BINDING_BETA in betas else [*betas, BINDING_BETA])
    body["extra_headers"] = headers


# Building requests --------------------------------------------------------------------------------------


def to_messages(messages: list[HistoryMessage]) -> tuple[str, list[dict[str, Any]]]:
    """The history as the ``system`` text and Messages API messages.

    Leading system messages make ``system``; a later one (a memory summary, say) is user text, since the API
    has no system role among messages. Messages of one role in a row join into one (tool results and the user's
    next words share a user message, results first), so roles alternate as the API requires. The last block
    of the history carries a cache point, so the next request reads all of it from the prompt cache."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system" and not out:
            if message.text:
                system.append(message.text)
            continue
        if message.role == "assistant":
            blocks = assistant_blocks(message)
        elif message.role == "tool":
            blocks = [tool_result(message)]
        elif message.role == "user":
            blocks = user_blocks(message)
        else:
            blocks = [{"type": "text", "text": message.text}] if message.text else []
        if not blocks:
            continue  # the API refuses empty content; nothing of the history is lost by leaving it out
        speaker = "assistant" if message.role == "assistant" else "user"
        if out and out[-1]["role"] == speaker:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": speaker, "content": blocks})
    if out:
        last = out[-1]["content"]
        if last[-1].get("type") not in THINKING_TYPES:  # thinking blocks take no cache point
            last[-1] = {**last[-1], "cache_control": CACHE_POINT}
    return "\n\n".join(system), out


def assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """An answer as the content blocks it came as, in their order: thinking blocks unchanged, each tool use
    with the input the history holds (an approver may have edited it), a call the history no longer holds left
    out. An answer without stored blocks (another API's, or one stored when only its thinking was kept) goes
    as its thinking blocks, its text, then its calls."""
    calls = {call.id: {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
             for call in message.calls}  # fmt: skip
    issued = [block for block in message.provider_items if block.get("type") in BLOCK_TYPES]
    blocks: list[dict[str, Any]] = []
    for block in issued:
        if block["type"] == "tool_use":
            if block.get("id") in calls:
                blocks.append(calls.pop(block["id"]))
        elif block["type"] != "text":
            blocks.append(block)
        elif block.get("text"):  # the API refuses empty text blocks
            blocks.append({"type": "text", "text": block["text"]})
    if message.text and not any(block["type"] == "text" for block in issued):
        blocks.append({"type": "text", "text": message.text})
    blocks.extend(calls.values())
    return blocks


def tool_result(message: ToolMessage) -> dict[str, Any]:
    """A result as the ``tool_result`` of the call it answers; a failed call's is marked ``is_error``."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.call_id, "content": message.text}
    if message.is_error:
        block["is_error"] = True
    return block


def user_blocks(message: UserMessage) -> list[dict[str, Any]]:
    """A user message as blocks: its text, then its images and documents (data URLs as base64 sources)."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            blocks.append({"type": "image", "source": _source(part.url)})
        elif isinstance(part, FilePart):
            blocks.append({"type": "document", "source": _source(part.data_url)})
    return blocks


def _source(url: Any) -> dict[str, Any]:
    """A data URL as a base64 source, any other URL as a URL source."""
    url = url if isinstance(url, str) else ""
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "base64", "media_type": media_type, "data": data}
    return {"type": "url", "url": url}


def _input(arguments: Any) -> dict[str, Any]:
    """A stored call's arguments as the ``input`` object the API wants; text that is no JSON object goes back
    the way the API sent it (``{"INVALID_JSON": text}``)."""
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {reading.INVALID_JSON: arguments}


def anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool definition as a Messages API tool (``input_schema``); others pass through."""
    function = function_of(tool)
    if function is None:
        return tool
    converted: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        converted["description"] = function["description"]
    converted["input_schema"] = function.get("parameters") or no_parameters()
    return converted


def options_for_messages(options: dict[str, Any]) -> dict[str, Any]:
    """Chat Completions-named options (``response_format``, ``max_tokens``, ``tool_choice``, ``stop``,
    ``reasoning_effort``, ``parallel_tool_calls``) in their Messages form; options already in that form pass
    through. Structured output is ``output_config.format`` (the API's JSON-schema output, which works with
    thinking on, where a forced tool is refused); ``json_object`` has no counterpart and is left out (that
    mode puts the schema in the instructions)."""
    out: dict[str, Any] = {}
    parallel = options.get("parallel_tool_calls")
    for key, value in options.items():
        if key == "response_format":
            if isinstance(value, dict) and value.get("type") == "json_schema":
                # The SDK's own transform closes every object (the API refuses one without
                # ``additionalProperties: false``) and moves constraints the API does not take into descriptions.
                schema = anthropic.transform_schema((value.get("json_schema") or {}).get("schema") or {})
                out["output_config"] = {**out.get("output_config", {}), "format": {"type": "json_schema",
                                                                                   "schema": schema}}  # fmt: skip
        elif key in ("max_tokens", "max_completion_tokens"):
            out["max_tokens"] = value
        elif key == "reasoning_effort":
            out["output_config"] = {**out.get("output_config", {}), "effort": value}
        elif key == "output_config" and isinstance(value, dict):
            out["output_config"] = {**out.get("output_config", {}), **value}
        elif key == "stop":
            out["stop_sequences"] = [value] if isinstance(value, str) else value
        elif key == "tool_choice":
            out["tool_choice"] = _tool_choice(value)
        elif key != "parallel_tool_calls":
            out[key] = value
    if parallel is False:
        out["tool_choice"] = {**out.get("tool_choice", {"type": "auto"}), "disable_parallel_tool_use": True}
    return out


def _tool_choice(value: Any) -> Any:
    if isinstance(value, str):
        return TOOL_CHOICES.get(value, value)
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        return {"type": "tool", "name": value["function"].get("name")}
    return value
