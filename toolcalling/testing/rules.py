"""Strict validation of Chat Completions request bodies, mirroring the OpenAI API's own checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import rules_files as files
from . import rules_options as options
from .rules_options import TOOL_NAME_RE
from .rules_responses import is_reasoning_model
from .wording import bad_type, bad_value, empty_array, missing, type_name, unknown

__all__ = ["validate_chat_request", "TOOL_NAME_RE", "ROLES"]

ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")

# The API rejects parameters it does not know; this list covers the documented Chat Completions
# parameters so that a typo in application code fails here exactly as it would in production.
KNOWN_PARAMS: frozenset[str] = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "n",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "seed",
        "metadata",
        "store",
        "service_tier",
        "reasoning_effort",
        "modalities",
        "audio",
        "prediction",
        "web_search_options",
        "functions",
        "function_call",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "verbosity",
        # pydantic/pydantic-ai: tests/models/cassettes/test_openai/test_openai_moderation_flagged.yaml
        "moderation",
    }
)

# Keys accepted on each message role. Assistant messages also tolerate the fields the API itself
# returns (refusal, annotations, audio, function_call) because callers commonly echo a response
# message straight back into the history and the API accepts that.
MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "tool_calls", "refusal", "annotations", "audio", "function_call"}
    ),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}

USER_PART_TYPES: tuple[str, ...] = ("text", "image_url", "input_audio", "file")
ASSISTANT_PART_TYPES: tuple[str, ...] = ("text", "refusal")
TEXT_PART_TYPES: tuple[str, ...] = ("text",)

TOOL_CALLS_RULE = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'."
)
TOOL_MESSAGE_RULE = "Messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."


def validate_chat_request(body: object) -> list[str]:
    """Return the errors the OpenAI API would report for this request body; empty means valid."""
    if not isinstance(body, Mapping):
        return [f"Invalid request body: expected a JSON object, but got {type_name(body)} instead."]
    errors: list[str] = []
    for key in body:
        if key not in KNOWN_PARAMS:
            errors.append(f"Unrecognized request argument supplied: {key}")

    model = body.get("model")
    if model is None or model == "":
        errors.append("you must provide a model parameter")
    elif not isinstance(model, str):
        errors.append(bad_type("model", "a string", model))

    _validate_reasoning_sampling(model, body, errors)
    if is_reasoning_model(model):
        # OpenAI's reasoning models take function tools only on the Responses API.
        if body.get("tools"):
            errors.append(f"Function tools with reasoning_effort are not supported for {model} in "
                          "/v1/chat/completions. Please use /v1/responses instead.")  # fmt: skip
    _validate_instruction_roles(model, body.get("messages"), errors)
    tool_names = options.validate_tools(body, errors)
    options.validate_tool_choice(body, tool_names, errors)
    _validate_messages(body, errors)
    options.validate_response_format(body, errors)
    options.validate_streaming(body, errors)
    options.validate_sampling(body, errors)
    return errors


# --- what some models refuse ---------------------------------------------------------------------

# OpenAI's reasoning models on Chat Completions: o1 and o1-mini too, which the Responses rules do not name.
CHAT_REASONING_PREFIXES: tuple[str, ...] = ("o1", "o3", "o4", "gpt-5")
# Models that refuse a temperature outright rather than one other than the default: o3-mini answers "Unsupported
# parameter" (https://github.com/BeehiveInnovations/pal-mcp-server/issues/78, beside o3's "Unsupported value").
NO_TEMPERATURE_PREFIXES: tuple[str, ...] = ("o3-mini",)
# Models that take neither a system nor a developer message (pydantic/pydantic-ai:
# tests/models/cassettes/test_openai/test_openai_o1_mini_system_role[system].yaml and [developer].yaml).
NO_INSTRUCTIONS_PREFIXES: tuple[str, ...] = ("o1-mini",)


def _validate_reasoning_sampling(model: object, body: Mapping[str, Any], errors: list[str]) -> None:
    """A reasoning model takes only the default temperature (1), no top_p, and max_completion_tokens, not max_tokens.

    Chat Completions words a temperature other than 1 as an unsupported *value* (recorded for o1-mini in
    https://github.com/leafo/lua-openai/issues/12, for o3 in pal-mcp-server#78), where the Responses API says
    "Unsupported parameter"; o3-mini refuses the parameter itself."""
    if not isinstance(model, str) or not model.startswith(CHAT_REASONING_PREFIXES):
        return
    temperature = body.get("temperature")
    if temperature is not None and model.startswith(NO_TEMPERATURE_PREFIXES):
        errors.append("Unsupported parameter: 'temperature' is not supported with this model.")
    elif temperature is not None and temperature != 1:
        errors.append(f"Unsupported value: 'temperature' does not support {temperature} with this model. "
                      "Only the default (1) value is supported.")  # fmt: skip
    if body.get("top_p") is not None:
        errors.append("Unsupported parameter: 'top_p' is not supported with this model.")
    if body.get("max_tokens") is not None:
        # https://github.com/teilomillet/gollm/issues/33 (o1, o3-mini); the Vercel AI SDK's recorded
        # packages/openai/src/chat/__fixtures__/reasoning-model-legacy-parameter-error.json says the same.
        errors.append("Unsupported parameter: 'max_tokens' is not supported with this model. "
                      "Use 'max_completion_tokens' instead.")  # fmt: skip


def _validate_instruction_roles(model: object, messages: object, errors: list[str]) -> None:
    if not isinstance(model, str) or not model.startswith(NO_INSTRUCTIONS_PREFIXES) or not isinstance(messages, list):
        return
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role in ("system", "developer"):
            errors.append(f"Unsupported value: 'messages[{index}].role' does not support '{role}' with this model.")


# --- messages -----------------------------------------------------------------------------------


def _validate_messages(body: Mapping[str, Any], errors: list[str]) -> None:
    if "messages" not in body:
        errors.append(missing("messages"))
        return
    messages = body["messages"]
    if not isinstance(messages, list):
        errors.append(bad_type("messages", "an array", messages))
        return
    if not messages:
        errors.append(empty_array("messages"))
        return

    well_formed = True
    for index, message in enumerate(messages):
        if not _validate_message(index, message, errors):
            well_formed = False
    # Ordering rules only make sense once every message has a usable shape; otherwise the
    # structural errors above already explain what is wrong.
    if well_formed:
        _validate_tool_sequence(messages, errors)


def _validate_message(index: int, message: object, errors: list[str]) -> bool:
    path = f"messages[{index}]"
    if not isinstance(message, Mapping):
        errors.append(bad_type(path, "an object", message))
        return False
    if "role" not in message:
        errors.append(missing(f"{path}.role"))
        return False
    role = message["role"]
    if role not in ROLES:
        errors.append(bad_value(f"{path}.role", role, ROLES))
        return False
    start = len(errors)
    for key in message:
        if key not in MESSAGE_KEYS[role]:
            errors.append(unknown(f"{path}.{key}"))
    if "name" in message and not isinstance(message["name"], str):
        errors.append(bad_type(f"{path}.name", "a string", message["name"]))

    if role in ("system", "developer"):
        _validate_content(path, message, TEXT_PART_TYPES, errors, required=True)
    elif role == "user":
        _validate_content(path, message, USER_PART_TYPES, errors, required=True)
    elif role == "assistant":
        has_calls = message.get("tool_calls") is not None
        _validate_content(path, message, ASSISTANT_PART_TYPES, errors, required=not has_calls)
        if "tool_calls" in message and message["tool_calls"] is not None:
            _validate_tool_calls(path, message["tool_calls"], errors)
    else:  # tool
        _validate_content(path, message, TEXT_PART_TYPES, errors, required=True)
        if "tool_call_id" not in message:
            errors.append(missing(f"{path}.tool_call_id"))
        elif not isinstance(message["tool_call_id"], str):
            errors.append(bad_type(f"{path}.tool_call_id", "a string", message["tool_call_id"]))
    return len(errors) == start


def _validate_content(
    path: str,
    message: Mapping[str, Any],
    part_types: tuple[str, ...],
    errors: list[str],
    *,
    required: bool,
) -> None:
    content_path = f"{path}.content"
    content = message.get("content")
    if content is None:
        if required:
            if "content" not in message:
                errors.append(missing(content_path))
            else:
                errors.append(bad_type(content_path, "one of a string or array of objects", None))
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        errors.append(bad_type(content_path, "one of a string or array of objects", content))
        return
    if not content:
        errors.append(empty_array(content_path))
        return
    for part_index, part in enumerate(content):
        _validate_content_part(f"{content_path}[{part_index}]", part, part_types, errors)


def _validate_content_part(path: str, part: object, part_types: tuple[str, ...], errors: list[str]) -> None:
    if not isinstance(part, Mapping):
        errors.append(bad_type(path, "an object", part))
        return
    if "type" not in part:
        errors.append(missing(f"{path}.type"))
        return
    part_type = part["type"]
    if part_type not in part_types:
        errors.append(bad_value(f"{path}.type", part_type, part_types))
        return
    if part_type in ("text", "refusal"):
        if part_type not in part:
            errors.append(missing(f"{path}.{part_type}"))
        elif not isinstance(part[part_type], str):
            errors.append(bad_type(f"{path}.{part_type}", "a string", part[part_type]))
    else:
        if part_type not in part:
            errors.append(missing(f"{path}.{part_type}"))
        elif not isinstance(part[part_type], Mapping):
            errors.append(bad_type(f"{path}.{part_type}", "an object", part[part_type]))
        elif part_type == "image_url" and not isinstance(part[part_type].get("url"), str):
            errors.append(missing(f"{path}.image_url.url"))
        elif part_type == "image_url":
            errors.extend(files.image_url_errors(f"{path}.image_url.url", part[part_type]["url"]))
        elif part_type == "file":
            errors.extend(files.file_data_errors(f"{path}.file.file_data", part[part_type].get("file_data")))
    for key in part:
        if key not in ("type", part_type):
            errors.append(unknown(f"{path}.{key}"))


def _validate_tool_calls(path: str, tool_calls: object, errors: list[str]) -> None:
    calls_path = f"{path}.tool_calls"
    if not isinstance(tool_calls, list):
        errors.append(bad_type(calls_path, "an array", tool_calls))
        return
    if not tool_calls:
        errors.append(empty_array(calls_path))
        return
    seen: set[str] = set()
    for call_index, call in enumerate(tool_calls):
        call_path = f"{calls_path}[{call_index}]"
        if not isinstance(call, Mapping):
            errors.append(bad_type(call_path, "an object", call))
            continue
        for key in call:
            if key not in ("id", "type", "function"):
                errors.append(unknown(f"{call_path}.{key}"))
        call_id = call.get("id")
        if "id" not in call:
            errors.append(missing(f"{call_path}.id"))
        elif not isinstance(call_id, str):
            errors.append(bad_type(f"{call_path}.id", "a string", call_id))
        elif call_id in seen:
            errors.append(f"Invalid '{call_path}.id': duplicate tool call id '{call_id}' in {path}.")
        else:
            seen.add(call_id)
        if "type" not in call:
            errors.append(missing(f"{call_path}.type"))
        elif call["type"] != "function":
            errors.append(bad_value(f"{call_path}.type", call["type"], ("function",)))
        function = call.get("function")
        if "function" not in call:
            errors.append(missing(f"{call_path}.function"))
            continue
        if not isinstance(function, Mapping):
            errors.append(bad_type(f"{call_path}.function", "an object", function))
            continue
        for key in function:
            if key not in ("name", "arguments"):
                errors.append(unknown(f"{call_path}.function.{key}"))
        for key in ("name", "arguments"):
            if key not in function:
                errors.append(missing(f"{call_path}.function.{key}"))
            elif not isinstance(function[key], str):
                # Arguments are JSON *text*; passing a dict is the classic mistake this catches.
                errors.append(bad_type(f"{call_path}.function.{key}", "a string", function[key]))


def _validate_tool_sequence(messages: list[Mapping[str, Any]], errors: list[str]) -> None:
    """Enforce that every tool call is answered by tool messages directly after it, exactly once."""
    block_index: int | None = None  # index of the assistant message whose calls are being answered
    block_ids: list[str] = []
    answered: dict[str, int] = {}

    def unanswered_error() -> str:
        missing = [call_id for call_id in block_ids if call_id not in answered]
        return (
            f"Invalid parameter: messages[{block_index}]: {TOOL_CALLS_RULE} "
            f"The following tool_call_ids did not have response messages: {', '.join(missing)}"
        )

    def block_open() -> bool:
        return block_index is not None and any(call_id not in answered for call_id in block_ids)

    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if block_index is None or call_id not in block_ids:
                errors.append(f"Invalid parameter: messages[{index}]: {TOOL_MESSAGE_RULE}")
            elif call_id in answered:
                errors.append(
                    f"Invalid parameter: messages[{index}]: tool_call_id '{call_id}' was already answered "
                    f"by messages[{answered[call_id]}]; each tool call must have exactly one tool message."
                )
            else:
                answered[call_id] = index
            continue
        if block_open():
            errors.append(unanswered_error())
        block_index, block_ids, answered = None, [], {}
        if role == "assistant" and message.get("tool_calls"):
            block_index = index
            block_ids = [call["id"] for call in message["tool_calls"]]
    if block_open():
        errors.append(unanswered_error())
