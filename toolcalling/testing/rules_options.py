"""Strict checks of a request's options: tools, tool choice, response format, streaming and sampling."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .wording import bad_type, bad_value, empty_array, is_int, is_number, missing, type_name, unknown

TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


# --- tools --------------------------------------------------------------------------------------


def validate_tools(body: Mapping[str, Any], errors: list[str]) -> set[str]:
    names: set[str] = set()
    if "tools" not in body:
        return names
    tools = body["tools"]
    if not isinstance(tools, list):
        errors.append(bad_type("tools", "an array", tools))
        return names
    if not tools:
        errors.append(empty_array("tools"))
        return names
    for index, tool in enumerate(tools):
        path = f"tools[{index}]"
        if not isinstance(tool, Mapping):
            errors.append(bad_type(path, "an object", tool))
            continue
        for key in tool:
            if key not in ("type", "function"):
                errors.append(unknown(f"{path}.{key}"))
        if "type" not in tool:
            errors.append(missing(f"{path}.type"))
        elif tool["type"] != "function":
            errors.append(bad_value(f"{path}.type", tool["type"], ("function",)))
        if "function" not in tool:
            errors.append(missing(f"{path}.function"))
            continue
        function = tool["function"]
        if not isinstance(function, Mapping):
            errors.append(bad_type(f"{path}.function", "an object", function))
            continue
        for key in function:
            if key not in ("name", "description", "parameters", "strict"):
                errors.append(unknown(f"{path}.function.{key}"))
        name = function.get("name")
        valid = _valid_name(f"{path}.function.name", function, errors)
        if valid is not None:
            if valid in names:
                errors.append(f"Invalid 'tools': duplicate function name '{valid}' in {path}.")
            else:
                names.add(valid)
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            errors.append(bad_type(f"{path}.function.description", "a string", description))
        strict = function.get("strict")
        if strict is not None and not isinstance(strict, bool):
            errors.append(bad_type(f"{path}.function.strict", "a boolean", strict))
        if "parameters" in function:
            label = f"function '{name}'" if isinstance(name, str) else f"{path}.function"
            _validate_schema_root(label, function["parameters"], strict is True, errors)
    return names


def _valid_name(path: str, container: Mapping[str, Any], errors: list[str]) -> str | None:
    """``container["name"]`` when it is a string matching the pattern function and schema names share, else None
    with the error appended."""
    name = container.get("name")
    if "name" not in container:
        errors.append(missing(path))
    elif not isinstance(name, str):
        errors.append(bad_type(path, "a string", name))
    elif not TOOL_NAME_RE.match(name):
        errors.append(
            f"Invalid '{path}': string does not match pattern. "
            f"Expected a string that matches the pattern '{TOOL_NAME_RE.pattern}'."
        )
    else:
        return name
    return None


def _validate_schema_root(label: str, schema: object, strict: bool, errors: list[str]) -> None:
    prefix = f"Invalid schema for {label}"
    if not isinstance(schema, Mapping):
        errors.append(f"{prefix}: schema must be a JSON Schema object, got {type_name(schema)}.")
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


def validate_tool_choice(body: Mapping[str, Any], tool_names: set[str], errors: list[str]) -> None:
    has_tools = bool(body.get("tools"))
    if "parallel_tool_calls" in body:
        if not isinstance(body["parallel_tool_calls"], bool):
            errors.append(bad_type("parallel_tool_calls", "a boolean", body["parallel_tool_calls"]))
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
            errors.append(bad_value("tool_choice", choice, ("none", "auto", "required")))
        elif choice != "none" and not has_tools:
            errors.append("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
        return
    if not isinstance(choice, Mapping):
        errors.append(bad_type("tool_choice", "one of a string or object", choice))
        return
    if choice.get("type") != "function":
        errors.append(bad_value("tool_choice.type", choice.get("type"), ("function",)))
        return
    function = choice.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        errors.append(missing("tool_choice.function.name"))
        return
    if not has_tools:
        errors.append("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
    elif function["name"] not in tool_names:
        errors.append(
            f"Invalid value for 'tool_choice': function '{function['name']}' was not found in the list of 'tools'."
        )


# --- response format, streaming, sampling ---------------------------------------------------------


def validate_response_format(body: Mapping[str, Any], errors: list[str]) -> None:
    if "response_format" not in body:
        return
    fmt = body["response_format"]
    if not isinstance(fmt, Mapping):
        errors.append(bad_type("response_format", "an object", fmt))
        return
    kind = fmt.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        errors.append(bad_value("response_format.type", kind, ("text", "json_object", "json_schema")))
        return
    allowed = {"type", "json_schema"} if kind == "json_schema" else {"type"}
    for key in fmt:
        if key not in allowed:
            errors.append(unknown(f"response_format.{key}"))
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
        errors.append(missing("response_format.json_schema"))
        return
    if not isinstance(spec, Mapping):
        errors.append(bad_type("response_format.json_schema", "an object", spec))
        return
    for key in spec:
        if key not in ("name", "description", "schema", "strict"):
            errors.append(unknown(f"response_format.json_schema.{key}"))
    name = spec.get("name")
    _valid_name("response_format.json_schema.name", spec, errors)
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        errors.append(bad_type("response_format.json_schema.strict", "a boolean", strict))
    if "schema" not in spec:
        errors.append(missing("response_format.json_schema.schema"))
        return
    schema = spec["schema"]
    if not isinstance(schema, Mapping):
        errors.append(bad_type("response_format.json_schema.schema", "an object", schema))
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


def validate_streaming(body: Mapping[str, Any], errors: list[str]) -> None:
    stream = body.get("stream")
    if "stream" in body and stream is not None and not isinstance(stream, bool):
        errors.append(bad_type("stream", "a boolean", stream))
    if "stream_options" not in body or body["stream_options"] is None:
        return
    options = body["stream_options"]
    if stream is not True:
        errors.append("Invalid value for 'stream_options': 'stream_options' is only allowed when 'stream' is enabled.")
    if not isinstance(options, Mapping):
        errors.append(bad_type("stream_options", "an object", options))
        return
    for key, value in options.items():
        if key not in ("include_usage", "include_obfuscation"):
            errors.append(unknown(f"stream_options.{key}"))
        elif not isinstance(value, bool):
            errors.append(bad_type(f"stream_options.{key}", "a boolean", value))


def _check_range(
    body: Mapping[str, Any], key: str, low: float, high: float, errors: list[str], *, integer: bool = False
) -> None:
    if key not in body or body[key] is None:
        return
    value = body[key]
    if integer and not is_int(value):
        errors.append(bad_type(key, "an integer", value))
    elif not integer and not is_number(value):
        errors.append(bad_type(key, "a number", value))
    elif not low <= value <= high:
        errors.append(f"Invalid '{key}': {value} is out of range. Expected a value between {low} and {high}.")


def validate_sampling(body: Mapping[str, Any], errors: list[str]) -> None:
    _check_range(body, "temperature", 0, 2, errors)
    _check_range(body, "top_p", 0, 1, errors)
    _check_range(body, "presence_penalty", -2, 2, errors)
    _check_range(body, "frequency_penalty", -2, 2, errors)
    _check_range(body, "top_logprobs", 0, 20, errors, integer=True)
    for key in ("n", "max_tokens", "max_completion_tokens"):
        if body.get(key) is not None:
            value = body[key]
            if not is_int(value):
                errors.append(bad_type(key, "an integer", value))
            elif value < 1:
                errors.append(f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got {value}.")
    for key, expected, check in (
        ("seed", "an integer", is_int),
        ("logprobs", "a boolean", lambda v: isinstance(v, bool)),
        ("store", "a boolean", lambda v: isinstance(v, bool)),
        ("user", "a string", lambda v: isinstance(v, str)),
        ("service_tier", "a string", lambda v: isinstance(v, str)),
        ("reasoning_effort", "a string", lambda v: isinstance(v, str)),
    ):
        if body.get(key) is not None and not check(body[key]):
            errors.append(bad_type(key, expected, body[key]))
    if body.get("top_logprobs") is not None and body.get("logprobs") is not True:
        errors.append("Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.")
    stop = body.get("stop")
    if stop is not None:
        if isinstance(stop, list):
            if len(stop) > 4 or not all(isinstance(item, str) for item in stop):
                errors.append("Invalid 'stop': expected a string or an array of at most 4 strings.")
        elif not isinstance(stop, str):
            errors.append(bad_type("stop", "one of a string or array of strings", stop))
    metadata = body.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            errors.append(bad_type("metadata", "an object", metadata))
        elif len(metadata) > 16 or not all(isinstance(v, str) for v in metadata.values()):
            errors.append("Invalid 'metadata': expected an object with at most 16 string values.")
