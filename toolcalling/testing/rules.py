"""Strict validation of Chat Completions request bodies, mirroring the OpenAI API's own checks."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["validate_chat_request", "TOOL_NAME_RE", "ROLES"]

ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

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


def _type_name(value: object) -> str:
    """Describe a JSON value the way the API does in type errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _quote_list(values: Iterable[str]) -> str:
    items = [f"'{v}'" for v in values]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + ", and " + items[-1]


def _missing(path: str) -> str:
    return f"Missing required parameter: '{path}'."


def _bad_type(path: str, expected: str, value: object) -> str:
    return f"Invalid type for '{path}': expected {expected}, but got {_type_name(value)} instead."


def _bad_value(path: str, value: object, supported: Iterable[str]) -> str:
    return f"Invalid value for '{path}': '{value}'. Supported values are: {_quote_list(supported)}."


def _empty_array(path: str) -> str:
    return f"Invalid '{path}': empty array. Expected an array with minimum length 1, but got an empty array instead."


def _unknown(path: str) -> str:
    return f"Unknown parameter: '{path}'."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def validate_chat_request(body: object) -> list[str]:
    """Return the errors the OpenAI API would report for this request body; empty means valid."""
    if not isinstance(body, Mapping):
        return [f"Invalid request body: expected a JSON object, but got {_type_name(body)} instead."]
    errors: list[str] = []
    for key in body:
        if key not in KNOWN_PARAMS:
            errors.append(f"Unrecognized request argument supplied: {key}")

    model = body.get("model")
    if model is None or model == "":
        errors.append("you must provide a model parameter")
    elif not isinstance(model, str):
        errors.append(_bad_type("model", "a string", model))

    tool_names = _validate_tools(body, errors)
    _validate_tool_choice(body, tool_names, errors)
    _validate_messages(body, errors)
    _validate_response_format(body, errors)
    _validate_streaming(body, errors)
    _validate_sampling(body, errors)
    return errors


# --- messages -----------------------------------------------------------------------------------


def _validate_messages(body: Mapping[str, Any], errors: list[str]) -> None:
    if "messages" not in body:
        errors.append(_missing("messages"))
        return
    messages = body["messages"]
    if not isinstance(messages, list):
        errors.append(_bad_type("messages", "an array", messages))
        return
    if not messages:
        errors.append(_empty_array("messages"))
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
        errors.append(_bad_type(path, "an object", message))
        return False
    if "role" not in message:
        errors.append(_missing(f"{path}.role"))
        return False
    role = message["role"]
    if role not in ROLES:
        errors.append(_bad_value(f"{path}.role", role, ROLES))
        return False
    start = len(errors)
    for key in message:
        if key not in MESSAGE_KEYS[role]:
            errors.append(_unknown(f"{path}.{key}"))
    if "name" in message and not isinstance(message["name"], str):
        errors.append(_bad_type(f"{path}.name", "a string", message["name"]))

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
            errors.append(_missing(f"{path}.tool_call_id"))
        elif not isinstance(message["tool_call_id"], str):
            errors.append(_bad_type(f"{path}.tool_call_id", "a string", message["tool_call_id"]))
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
                errors.append(_missing(content_path))
            else:
                errors.append(_bad_type(content_path, "one of a string or array of objects", None))
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        errors.append(_bad_type(content_path, "one of a string or array of objects", content))
        return
    if not content:
        errors.append(_empty_array(content_path))
        return
    for part_index, part in enumerate(content):
        _validate_content_part(f"{content_path}[{part_index}]", part, part_types, errors)


def _validate_content_part(path: str, part: object, part_types: tuple[str, ...], errors: list[str]) -> None:
    if not isinstance(part, Mapping):
        errors.append(_bad_type(path, "an object", part))
        return
    if "type" not in part:
        errors.append(_missing(f"{path}.type"))
        return
    part_type = part["type"]
    if part_type not in part_types:
        errors.append(_bad_value(f"{path}.type", part_type, part_types))
        return
    if part_type in ("text", "refusal"):
        if part_type not in part:
            errors.append(_missing(f"{path}.{part_type}"))
        elif not isinstance(part[part_type], str):
            errors.append(_bad_type(f"{path}.{part_type}", "a string", part[part_type]))
    else:
        if part_type not in part:
            errors.append(_missing(f"{path}.{part_type}"))
        elif not isinstance(part[part_type], Mapping):
            errors.append(_bad_type(f"{path}.{part_type}", "an object", part[part_type]))
        elif part_type == "image_url" and not isinstance(part[part_type].get("url"), str):
            errors.append(_missing(f"{path}.image_url.url"))
    for key in part:
        if key not in ("type", part_type):
            errors.append(_unknown(f"{path}.{key}"))


def _validate_tool_calls(path: str, tool_calls: object, errors: list[str]) -> None:
    calls_path = f"{path}.tool_calls"
    if not isinstance(tool_calls, list):
        errors.append(_bad_type(calls_path, "an array", tool_calls))
        return
    if not tool_calls:
        errors.append(_empty_array(calls_path))
        return
    seen: set[str] = set()
    for call_index, call in enumerate(tool_calls):
        call_path = f"{calls_path}[{call_index}]"
        if not isinstance(call, Mapping):
            errors.append(_bad_type(call_path, "an object", call))
            continue
        for key in call:
            if key not in ("id", "type", "function"):
                errors.append(_unknown(f"{call_path}.{key}"))
        call_id = call.get("id")
        if "id" not in call:
            errors.append(_missing(f"{call_path}.id"))
        elif not isinstance(call_id, str):
            errors.append(_bad_type(f"{call_path}.id", "a string", call_id))
        elif call_id in seen:
            errors.append(f"Invalid '{call_path}.id': duplicate tool call id '{call_id}' in {path}.")
        else:
            seen.add(call_id)
        if "type" not in call:
            errors.append(_missing(f"{call_path}.type"))
        elif call["type"] != "function":
            errors.append(_bad_value(f"{call_path}.type", call["type"], ("function",)))
        function = call.get("function")
        if "function" not in call:
            errors.append(_missing(f"{call_path}.function"))
            continue
        if not isinstance(function, Mapping):
            errors.append(_bad_type(f"{call_path}.function", "an object", function))
            continue
        for key in function:
            if key not in ("name", "arguments"):
                errors.append(_unknown(f"{call_path}.function.{key}"))
        for key in ("name", "arguments"):
            if key not in function:
                errors.append(_missing(f"{call_path}.function.{key}"))
            elif not isinstance(function[key], str):
                # Arguments are JSON *text*; passing a dict is the classic mistake this catches.
                errors.append(_bad_type(f"{call_path}.function.{key}", "a string", function[key]))


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


# --- tools --------------------------------------------------------------------------------------


def _validate_tools(body: Mapping[str, Any], errors: list[str]) -> set[str]:
    names: set[str] = set()
    if "tools" not in body:
        return names
    tools = body["tools"]
    if not isinstance(tools, list):
        errors.append(_bad_type("tools", "an array", tools))
        return names
    if not tools:
        errors.append(_empty_array("tools"))
        return names
    for index, tool in enumerate(tools):
        path = f"tools[{index}]"
        if not isinstance(tool, Mapping):
            errors.append(_bad_type(path, "an object", tool))
            continue
        for key in tool:
            if key not in ("type", "function"):
                errors.append(_unknown(f"{path}.{key}"))
        if "type" not in tool:
            errors.append(_missing(f"{path}.type"))
        elif tool["type"] != "function":
            errors.append(_bad_value(f"{path}.type", tool["type"], ("function",)))
        if "function" not in tool:
            errors.append(_missing(f"{path}.function"))
            continue
        function = tool["function"]
        if not isinstance(function, Mapping):
            errors.append(_bad_type(f"{path}.function", "an object", function))
            continue
        for key in function:
            if key not in ("name", "description", "parameters", "strict"):
                errors.append(_unknown(f"{path}.function.{key}"))
        name = function.get("name")
        if "name" not in function:
            errors.append(_missing(f"{path}.function.name"))
        elif not isinstance(name, str):
            errors.append(_bad_type(f"{path}.function.name", "a string", name))
        elif not TOOL_NAME_RE.match(name):
            errors.append(
                f"Invalid '{path}.function.name': string does not match pattern. "
                f"Expected a string that matches the pattern '{TOOL_NAME_RE.pattern}'."
            )
        elif name in names:
            errors.append(f"Invalid 'tools': duplicate function name '{name}' in {path}.")
        else:
            names.add(name)
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            errors.append(_bad_type(f"{path}.function.description", "a string", description))
        strict = function.get("strict")
        if strict is not None and not isinstance(strict, bool):
            errors.append(_bad_type(f"{path}.function.strict", "a boolean", strict))
        if "parameters" in function:
            label = f"function '{name}'" if isinstance(name, str) else f"{path}.function"
            _validate_schema_root(label, function["parameters"], strict is True, errors)
    return names


def _validate_schema_root(label: str, schema: object, strict: bool, errors: list[str]) -> None:
    prefix = f"Invalid schema for {label}"
    if not isinstance(schema, Mapping):
        errors.append(f"{prefix}: schema must be a JSON Schema object, got {_type_name(schema)}.")
        return
    if schema.get("type") != "object":
        errors.append(
            f"{prefix}: schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{schema.get('type')}\"'."
        )
        return
    _check_object_shape(prefix, schema, (), errors)
    if strict:
        _check_strict(prefix, schema, (), errors)


def _check_object_shape(prefix: str, schema: Mapping[str, Any], context: tuple[str, ...], errors: list[str]) -> None:
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, Mapping):
        errors.append(f"{prefix}: In context={context}, 'properties' must be an object.")
    required = schema.get("required")
    if required is not None and (not isinstance(required, list) or not all(isinstance(item, str) for item in required)):
        errors.append(f"{prefix}: In context={context}, 'required' must be an array of strings.")


def _check_strict(prefix: str, schema: object, context: tuple[str, ...], errors: list[str]) -> None:
    """Apply the Structured Outputs requirements that the API enforces when strict is true."""
    if not isinstance(schema, Mapping):
        return
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types) or "properties" in schema
    if is_object:
        _check_object_shape(prefix, schema, context, errors)
        if schema.get("additionalProperties") is not False:
            errors.append(
                f"{prefix}: In context={context}, 'additionalProperties' is required to be supplied and to be false."
            )
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        required_list = required if isinstance(required, list) else []
        missing = [key for key in properties if key not in required_list]
        if required is None or missing:
            detail = f" Missing '{missing[0]}'." if missing else ""
            errors.append(
                f"{prefix}: In context={context}, 'required' is required to be supplied and to be an array "
                f"including every key in properties.{detail}"
            )
        for key, sub in properties.items():
            _check_strict(prefix, sub, (*context, "properties", key), errors)
    items = schema.get("items")
    if items is not None:
        _check_strict(prefix, items, (*context, "items"), errors)
    for keyword in ("anyOf", "allOf", "oneOf"):
        variants = schema.get(keyword)
        if isinstance(variants, list):
            for variant_index, variant in enumerate(variants):
                _check_strict(prefix, variant, (*context, keyword, str(variant_index)), errors)
    for keyword in ("$defs", "definitions"):
        defs = schema.get(keyword)
        if isinstance(defs, Mapping):
            for def_name, definition in defs.items():
                _check_strict(prefix, definition, (*context, keyword, def_name), errors)


def _validate_tool_choice(body: Mapping[str, Any], tool_names: set[str], errors: list[str]) -> None:
    has_tools = bool(body.get("tools"))
    if "parallel_tool_calls" in body:
        if not isinstance(body["parallel_tool_calls"], bool):
            errors.append(_bad_type("parallel_tool_calls", "a boolean", body["parallel_tool_calls"]))
        elif not has_tools:
            errors.append(
                "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' "
                "are specified."
            )
    if "tool_choice" not in body:
        return
    choice = body["tool_choice"]
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            errors.append(_bad_value("tool_choice", choice, ("none", "auto", "required")))
        elif choice != "none" and not has_tools:
            errors.append("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
        return
    if not isinstance(choice, Mapping):
        errors.append(_bad_type("tool_choice", "one of a string or object", choice))
        return
    if choice.get("type") != "function":
        errors.append(_bad_value("tool_choice.type", choice.get("type"), ("function",)))
        return
    function = choice.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        errors.append(_missing("tool_choice.function.name"))
        return
    if not has_tools:
        errors.append("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
    elif function["name"] not in tool_names:
        errors.append(
            f"Invalid value for 'tool_choice': function '{function['name']}' was not found in the list of 'tools'."
        )


# --- response format, streaming, sampling ---------------------------------------------------------


def _validate_response_format(body: Mapping[str, Any], errors: list[str]) -> None:
    if "response_format" not in body:
        return
    fmt = body["response_format"]
    if not isinstance(fmt, Mapping):
        errors.append(_bad_type("response_format", "an object", fmt))
        return
    kind = fmt.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        errors.append(_bad_value("response_format.type", kind, ("text", "json_object", "json_schema")))
        return
    allowed = {"type", "json_schema"} if kind == "json_schema" else {"type"}
    for key in fmt:
        if key not in allowed:
            errors.append(_unknown(f"response_format.{key}"))
    if kind == "json_object":
        # The API refuses JSON mode unless the prompt itself asks for JSON.
        if not _messages_mention_json(body.get("messages")):
            errors.append(
                "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
            )
        return
    if kind != "json_schema":
        return
    spec = fmt.get("json_schema")
    if "json_schema" not in fmt:
        errors.append(_missing("response_format.json_schema"))
        return
    if not isinstance(spec, Mapping):
        errors.append(_bad_type("response_format.json_schema", "an object", spec))
        return
    for key in spec:
        if key not in ("name", "description", "schema", "strict"):
            errors.append(_unknown(f"response_format.json_schema.{key}"))
    name = spec.get("name")
    if "name" not in spec:
        errors.append(_missing("response_format.json_schema.name"))
    elif not isinstance(name, str):
        errors.append(_bad_type("response_format.json_schema.name", "a string", name))
    elif not TOOL_NAME_RE.match(name):
        errors.append(
            "Invalid 'response_format.json_schema.name': string does not match pattern. "
            f"Expected a string that matches the pattern '{TOOL_NAME_RE.pattern}'."
        )
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        errors.append(_bad_type("response_format.json_schema.strict", "a boolean", strict))
    if "schema" not in spec:
        errors.append(_missing("response_format.json_schema.schema"))
        return
    schema = spec["schema"]
    if not isinstance(schema, Mapping):
        errors.append(_bad_type("response_format.json_schema.schema", "an object", schema))
        return
    if strict is True:
        _validate_schema_root(f"response_format '{name}'", schema, True, errors)


def _messages_mention_json(messages: object) -> bool:
    if not isinstance(messages, list):
        return True  # the messages error is reported separately
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        texts: list[str] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
        if any("json" in text.lower() for text in texts):
            return True
    return False


def _validate_streaming(body: Mapping[str, Any], errors: list[str]) -> None:
    stream = body.get("stream")
    if "stream" in body and stream is not None and not isinstance(stream, bool):
        errors.append(_bad_type("stream", "a boolean", stream))
    if "stream_options" not in body or body["stream_options"] is None:
        return
    options = body["stream_options"]
    if stream is not True:
        errors.append("Invalid value for 'stream_options': 'stream_options' is only allowed when 'stream' is enabled.")
    if not isinstance(options, Mapping):
        errors.append(_bad_type("stream_options", "an object", options))
        return
    for key, value in options.items():
        if key not in ("include_usage", "include_obfuscation"):
            errors.append(_unknown(f"stream_options.{key}"))
        elif not isinstance(value, bool):
            errors.append(_bad_type(f"stream_options.{key}", "a boolean", value))


def _check_range(
    body: Mapping[str, Any], key: str, low: float, high: float, errors: list[str], *, integer: bool = False
) -> None:
    if key not in body or body[key] is None:
        return
    value = body[key]
    if integer and not _is_int(value):
        errors.append(_bad_type(key, "an integer", value))
    elif not integer and not _is_number(value):
        errors.append(_bad_type(key, "a number", value))
    elif not low <= value <= high:
        errors.append(f"Invalid '{key}': {value} is out of range. Expected a value between {low} and {high}.")


def _validate_sampling(body: Mapping[str, Any], errors: list[str]) -> None:
    _check_range(body, "temperature", 0, 2, errors)
    _check_range(body, "top_p", 0, 1, errors)
    _check_range(body, "presence_penalty", -2, 2, errors)
    _check_range(body, "frequency_penalty", -2, 2, errors)
    _check_range(body, "top_logprobs", 0, 20, errors, integer=True)
    for key in ("n", "max_tokens", "max_completion_tokens"):
        if body.get(key) is not None:
            value = body[key]
            if not _is_int(value):
                errors.append(_bad_type(key, "an integer", value))
            elif value < 1:
                errors.append(f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got {value}.")
    for key, expected, check in (
        ("seed", "an integer", _is_int),
        ("logprobs", "a boolean", lambda v: isinstance(v, bool)),
        ("store", "a boolean", lambda v: isinstance(v, bool)),
        ("user", "a string", lambda v: isinstance(v, str)),
        ("service_tier", "a string", lambda v: isinstance(v, str)),
        ("reasoning_effort", "a string", lambda v: isinstance(v, str)),
    ):
        if body.get(key) is not None and not check(body[key]):
            errors.append(_bad_type(key, expected, body[key]))
    if body.get("top_logprobs") is not None and body.get("logprobs") is not True:
        errors.append("Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.")
    stop = body.get("stop")
    if stop is not None:
        if isinstance(stop, list):
            if len(stop) > 4 or not all(isinstance(item, str) for item in stop):
                errors.append("Invalid 'stop': expected a string or an array of at most 4 strings.")
        elif not isinstance(stop, str):
            errors.append(_bad_type("stop", "one of a string or array of strings", stop))
    metadata = body.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            errors.append(_bad_type("metadata", "an object", metadata))
        elif len(metadata) > 16 or not all(isinstance(v, str) for v in metadata.values()):
            errors.append("Invalid 'metadata': expected an object with at most 16 string values.")
