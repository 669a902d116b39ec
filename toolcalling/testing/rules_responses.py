"""Strict validation of Responses API request bodies (``/v1/responses``), mirroring the OpenAI API's own checks.

The server is stateless as the app uses it (``store: false``), so what it must remember between requests is
only what it issued: the reasoning items it sent (with their encrypted content) and the ids of the items that
came with them. ``Issued`` holds that; the rules read it to refuse a replay the real API would refuse.

Where each rule's text was observed (the API's answers quoted in public threads):
- reasoning pairing, both directions: see ``_check_pairing`` (continuedev/continue #8933, vercel/ai #7099,
  TanStack/ai #1212, omnigent-ai/omnigent #5066, laravel/ai PR #1052);
- a reasoning item without encrypted content under ``store: false``: "Item with id 'rs_…' not found. Items are
  not persisted when `store` is set to false. …" (earendil-works/pi #5059, can1357/oh-my-pi #41; on Azure
  OpenAI, openclaw/openclaw #21782);
- encrypted content that is not what the server issued: "The encrypted content for item rs_… could not be
  verified." (smallmain/vscode-unify-chat-provider #178; openai/codex #8145 for the older wording);
- a call output with no call before it: "No tool call found for function call output with call_id …."
  (continuedev/continue #10092, microsoft/vscode #320060); a call never answered: "No tool output found for
  function call …." (router-for-me/CLIProxyAPI #2368, openai/codex #620);
- sampling options on reasoning models: "Unsupported parameter: 'temperature' is not supported with this
  model." (OpenHands/software-agent-sdk #1837, sourcebot-dev/sourcebot #454);
- the parameter names (``KNOWN_PARAMS``), item keys and ``include`` values: the API reference's
  ``POST /v1/responses`` body as openai-python's ``ResponseCreateParams`` types it; their refusal texts are the
  API's shared wording (``wording.py``, taken with Chat Completions' rules);
- ``json_object`` without the word "json" in the input: the Chat Completions rule's text ("'messages' must contain
  the word 'json' in some form, to use 'response_format' of type 'json_object'.", ultimatejimmy/xray.koplugin
  #33) in the Responses API's names.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import rules_files as files
from .rules_options import _valid_name, _validate_schema_root
from .wording import bad_type, bad_value, is_number, missing, type_name, unknown

__all__ = ["Issued", "is_reasoning_model", "validate_responses_request", "REASONING_MODEL_PREFIXES"]

# OpenAI's reasoning models: they refuse sampling parameters, and function tools on Chat Completions.
REASONING_MODEL_PREFIXES: tuple[str, ...] = ("gpt-5", "o3", "o4")

KNOWN_PARAMS: frozenset[str] = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_tool_calls",
        "text",
        "reasoning",
        "stream",
        "stream_options",
        "store",
        "include",
        "temperature",
        "top_p",
        "top_logprobs",
        "max_output_tokens",
        "metadata",
        "previous_response_id",
        "conversation",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
        "service_tier",
        "truncation",
        "background",
        "user",
        # Accepted by gpt-5 (tests/contract/fixtures/responses/moderation_parameter_accepted.json).
        "moderation",
    }
)
INCLUDABLE = ("reasoning.encrypted_content", "message.output_text.logprobs", "file_search_call.results",
              "web_search_call.action.sources", "code_interpreter_call.outputs",
              "computer_call_output.output.image_url", "message.input_image.image_url")  # fmt: skip
ITEM_KEYS: dict[str, frozenset[str]] = {
    # ``phase`` as gpt-5.5 answers it, accepted replayed with its id
    # (tests/contract/fixtures/responses/message_with_phase_replayed_with_its_id.json).
    "message": frozenset({"type", "role", "content", "id", "status", "phase"}),
    "function_call": frozenset({"type", "call_id", "name", "arguments", "id", "status"}),
    "function_call_output": frozenset({"type", "call_id", "output", "id", "status"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
}
ROLES = ("user", "assistant", "system", "developer")
INPUT_PARTS = ("input_text", "input_image", "input_file")
OUTPUT_PARTS = ("output_text", "refusal")


def is_reasoning_model(model: object) -> bool:
    return isinstance(model, str) and model.startswith(REASONING_MODEL_PREFIXES)


@dataclass
class Issued:
    """What the server sent that a later request may send back: reasoning items by id (their encrypted
    content), the id of the item issued right after each, and for each item issued after a reasoning item,
    that item's id. The real API pairs them by these ids when they come back."""

    reasoning: dict[str, str | None] = field(default_factory=dict)
    following: dict[str, str] = field(default_factory=dict)
    """reasoning id -> the id of the item issued right after it."""
    owners: dict[str, str] = field(default_factory=dict)
    """item id -> the id of the reasoning item issued before it in the same response."""
    models: dict[str, str] = field(default_factory=dict)
    """reasoning id -> the model that issued it (no other model can read its encrypted content)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, output: list[dict[str, Any]], model: str | None = None) -> None:
        """Remember one response's output items, issued by ``model``."""
        with self.lock:
            owner: str | None = None
            for n, item in enumerate(output):
                item_id = item.get("id")
                if item.get("type") == "reasoning" and isinstance(item_id, str):
                    self.reasoning[item_id] = item.get("encrypted_content")
                    if model is not None:
                        self.models[item_id] = model
                    if n + 1 < len(output) and isinstance(output[n + 1].get("id"), str):
                        self.following[item_id] = output[n + 1]["id"]
                    owner = item_id
                elif owner is not None and isinstance(item_id, str):
                    self.owners[item_id] = owner


def validate_responses_request(body: object, issued: Issued | None = None) -> list[str]:
    """Return the errors the OpenAI API would report for this ``/v1/responses`` body; empty means valid."""
    if not isinstance(body, Mapping):
        return [f"Invalid request body: expected a JSON object, but got {type_name(body)} instead."]
    issued = issued if issued is not None else Issued()
    errors = [unknown(key) for key in body if key not in KNOWN_PARAMS]
    model = body.get("model")
    if model is None or model == "":
        errors.append(missing("model"))
    elif not isinstance(model, str):
        errors.append(bad_type("model", "a string", model))
    if is_reasoning_model(model):
        for key in ("temperature", "top_p"):
            if body.get(key) is not None:
                errors.append(f"Unsupported parameter: '{key}' is not supported with this model.")
    _validate_temperature(body.get("temperature"), errors)
    for key, kind in (("instructions", str), ("store", bool), ("stream", bool), ("parallel_tool_calls", bool)):
        if body.get(key) is not None and not isinstance(body[key], kind):
            errors.append(bad_type(key, "a boolean" if kind is bool else "a string", body[key]))
    if body.get("stream_options") is not None and body.get("stream") is not True:
        errors.append("Invalid value for 'stream_options': 'stream_options' is only allowed when 'stream' is enabled.")
    _validate_include(body.get("include"), errors)
    names = _validate_tools(body.get("tools"), errors)
    _validate_tool_choice(body.get("tool_choice"), names, errors)
    _validate_text(body, errors)
    _validate_input(body, issued, errors)
    return errors


def _validate_temperature(value: object, errors: list[str]) -> None:
    """``temperature`` between 0 and 2. Below: "Invalid 'temperature': decimal below minimum value. Expected a value
    >= 0, but got -1 instead." (tests/contract/fixtures/responses/temperature_below_minimum_refused.json); above,
    the same words for the maximum (inferred from the recorded one)."""
    if not is_number(value):
        return
    assert isinstance(value, int | float)  # narrows what is_number said
    if value < 0:
        errors.append(f"Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got {value} "
                      "instead.")  # fmt: skip
    elif value > 2:
        errors.append(f"Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got {value} "
                      "instead.")  # fmt: skip


def _validate_include(include: object, errors: list[str]) -> None:
    if include is None:
        return
    if not isinstance(include, list):
        errors.append(bad_type("include", "an array", include))
        return
    for n, value in enumerate(include):
        if value not in INCLUDABLE:
            errors.append(bad_value(f"include[{n}]", value, INCLUDABLE))


def _validate_tools(tools: object, errors: list[str]) -> set[str]:
    names: set[str] = set()
    if tools is None:
        return names
    if not isinstance(tools, list):
        errors.append(bad_type("tools", "an array", tools))
        return names
    for n, tool in enumerate(tools):
        path = f"tools[{n}]"
        if not isinstance(tool, Mapping):
            errors.append(bad_type(path, "an object", tool))
            continue
        if tool.get("type") != "function":
            errors.append(bad_value(f"{path}.type", tool.get("type"), ("function", "file_search", "web_search")))
            continue
        errors.extend(unknown(f"{path}.{key}") for key in tool if key not in ("type", "name", "description",
                                                                             "parameters", "strict"))  # fmt: skip
        name = _valid_name(f"{path}.name", tool, errors)
        if name is not None:
            if name in names:
                errors.append(f"Invalid 'tools': duplicate function name '{name}'.")
            names.add(name)
        strict = tool.get("strict", True)  # the Responses API makes function tools strict unless told otherwise
        if not isinstance(strict, bool):
            errors.append(bad_type(f"{path}.strict", "a boolean", strict))
        if "parameters" not in tool:
            errors.append(missing(f"{path}.parameters"))
        elif tool["parameters"] is not None:
            _validate_schema_root(f"function '{tool.get('name')}'", tool["parameters"], strict is True, errors)
    return names


def _validate_tool_choice(choice: object, names: set[str], errors: list[str]) -> None:
    if choice is None or choice in ("auto", "none", "required"):
        return
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        if choice.get("name") not in names:
            errors.append(f"Tool choice '{choice.get('name')}' not found in 'tools' parameter.")
        return
    errors.append(bad_value("tool_choice", choice, ("auto", "none", "required")))


def _validate_text(body: Mapping[str, Any], errors: list[str]) -> None:
    text = body.get("text")
    if text is None:
        return
    if not isinstance(text, Mapping):
        errors.append(bad_type("text", "an object", text))
        return
    errors.extend(unknown(f"text.{key}") for key in text if key not in ("format", "verbosity"))
    fmt = text.get("format")
    if fmt is None:
        return
    if not isinstance(fmt, Mapping) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        kind = fmt.get("type") if isinstance(fmt, Mapping) else fmt
        errors.append(bad_value("text.format.type", kind, ("text", "json_object", "json_schema")))
        return
    allowed = {"type", "name", "schema", "description", "strict"} if fmt["type"] == "json_schema" else {"type"}
    errors.extend(unknown(f"text.format.{key}") for key in fmt if key not in allowed)
    if fmt["type"] == "json_object" and "json" not in repr([body.get("instructions"), body.get("input")]).lower():
        errors.append(
            "Response input messages must contain the word 'json' in some form to use 'text.format' of type "
            "'json_object'."
        )
    if fmt["type"] == "json_schema":
        _valid_name("text.format.name", fmt, errors)
        if "schema" not in fmt:
            errors.append(missing("text.format.schema"))
        elif fmt.get("strict") is True:
            _validate_schema_root(f"text.format '{fmt.get('name')}'", fmt["schema"], True, errors)


# --- input items ------------------------------------------------------------------------------------


def _validate_input(body: Mapping[str, Any], issued: Issued, errors: list[str]) -> None:
    items = body.get("input")
    if items is None or isinstance(items, str):
        return
    if not isinstance(items, list):
        errors.append(bad_type("input", "a string or an array", items))
        return
    stateless = body.get("store") is False
    calls: dict[str, str] = {}  # call id -> item path, of calls not answered yet
    seen_calls: set[str] = set()
    replayed: set[str] = set()  # reasoning ids sent so far
    for n, item in enumerate(items):
        path = f"input[{n}]"
        if not isinstance(item, Mapping):
            errors.append(bad_type(path, "an object", item))
            continue
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in ITEM_KEYS:
            errors.append(bad_value(f"{path}.type", kind, tuple(ITEM_KEYS)))
            continue
        errors.extend(unknown(f"{path}.{key}") for key in item if key not in ITEM_KEYS[kind])
        _check_pairing(items, n, kind, issued, replayed, errors)
        if kind == "message":
            _validate_message(path, item, errors)
        elif kind == "reasoning":
            _validate_reasoning(path, item, issued, stateless, errors, model=body.get("model"))
            replayed.add(str(item.get("id")))
        elif kind == "function_call":
            for key in ("call_id", "name", "arguments"):
                if not isinstance(item.get(key), str):
                    errors.append(_wrong(path, item, key, "a string"))
            call_id = item.get("call_id")
            if isinstance(call_id, str):
                calls[call_id] = path
                seen_calls.add(call_id)
        else:
            call_id = item.get("call_id")
            if not isinstance(item.get("output"), str | list):
                errors.append(_wrong(path, item, "output", "a string"))
            if call_id not in seen_calls:
                errors.append(f"No tool call found for function call output with call_id {call_id}.")
            calls.pop(call_id, None)  # type: ignore[arg-type]
    errors.extend(f"No tool output found for function call {call_id}." for call_id in calls)


def _check_pairing(items: list[Any], n: int, kind: str, issued: Issued, replayed: set[str], errors: list[str]) -> None:
    """The API pairs a reasoning item with the item it issued right after it, by that item's id, in both
    directions. A reasoning item must come back right before that item: continuedev/continue #8933 and vercel/ai
    #7099 (function calls replayed without their ids) recorded "Item 'rs_…' of type 'reasoning' was provided
    without its required following item." An item whose id was issued after a reasoning item must come back
    after it: TanStack/ai #1212 and omnigent-ai/omnigent #5066 (reasoning dropped, ids kept) recorded "Item
    'fc_…' of type 'function_call' was provided without its required 'reasoning' item: 'rs_…'." A function call
    sent without its id is paired by nothing and accepted without its reasoning (laravel/ai PR #1052)."""
    item = items[n]
    item_id = item.get("id")
    if kind == "reasoning" and isinstance(item_id, str) and item_id in issued.following:
        after = items[n + 1] if n + 1 < len(items) else None
        if not isinstance(after, Mapping) or after.get("id") != issued.following[item_id]:
            errors.append(f"Item '{item_id}' of type 'reasoning' was provided without its required following item.")
    elif isinstance(item_id, str) and item_id in issued.owners and issued.owners[item_id] not in replayed:
        errors.append(f"Item '{item_id}' of type '{kind}' was provided without its required 'reasoning' item: "
                      f"'{issued.owners[item_id]}'.")  # fmt: skip


def _wrong(path: str, item: Mapping[str, Any], key: str, expected: str) -> str:
    """The error for an item's field that is missing or of the wrong type."""
    return missing(f"{path}.{key}") if key not in item else bad_type(f"{path}.{key}", expected, item[key])


def _validate_message(path: str, item: Mapping[str, Any], errors: list[str]) -> None:
    role = item.get("role")
    if role not in ROLES:
        errors.append(bad_value(f"{path}.role", role, ROLES))
        return
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        errors.append(_wrong(path, item, "content", "a string or an array"))
        return
    allowed = OUTPUT_PARTS if role == "assistant" else INPUT_PARTS
    for m, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in allowed:
            errors.append(bad_value(f"{path}.content[{m}].type", kind, allowed))
        elif kind == "input_image":
            url = part.get("image_url")
            where = f"{path}.content[{m}].image_url"
            errors.extend(files.image_url_errors(where, url) if isinstance(url, str) else [missing(where)])
        elif kind == "input_file":
            errors.extend(files.file_data_errors(f"{path}.content[{m}].file_data", part.get("file_data")))


def _validate_reasoning(
    path: str, item: Mapping[str, Any], issued: Issued, stateless: bool, errors: list[str], *, model: object = None
) -> None:
    reasoning_id = item.get("id")
    if not isinstance(item.get("summary"), list):
        errors.append(_wrong(path, item, "summary", "an array"))
    encrypted = item.get("encrypted_content")
    if stateless and not encrypted:
        errors.append(f"Item with id '{reasoning_id}' not found. Items are not persisted when `store` is set to "
                      "false. Try again with `store` set to true, or remove this item from your input.")  # fmt: skip
    elif encrypted and issued.reasoning.get(str(reasoning_id)) != encrypted:
        errors.append(f"The encrypted content for item {reasoning_id} could not be verified.")
    elif encrypted and issued.models.get(str(reasoning_id), model) != model:
        # Another model's reasoning: only the model that issued it can decrypt it (openai/codex #17541, a model
        # switch mid-conversation; the text as inspect_ai #3978 quotes the API's invalid_encrypted_content).
        errors.append(f"The encrypted content for item {reasoning_id} could not be verified. Reason: Encrypted "
                      "content could not be decrypted or parsed.")  # fmt: skip
