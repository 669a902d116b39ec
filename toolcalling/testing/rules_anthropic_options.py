"""Strict validation of an Anthropic Messages request's options (``system``, ``tools``, ``tool_choice``,
``thinking``, ``output_config``, cache points), worded as the API words its errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .rules_options import TOOL_NAME_RE, _validate_schema_root
from .wording import is_int

__all__ = [
    "extra",
    "required",
    "thinking_enabled",
    "validate_cache_control",
    "validate_output_config",
    "validate_system",
    "validate_text_block",
    "validate_thinking",
    "validate_tool_choice",
    "validate_tools",
]

TOOL_KEYS = frozenset({"name", "description", "input_schema", "cache_control", "type", "strict"})
TEXT_KEYS = frozenset({"type", "text", "cache_control", "citations"})
MIN_THINKING_BUDGET = 1024


def extra(path: str) -> str:
    return f"{path}: Extra inputs are not permitted"


def required(path: str) -> str:
    return f"{path}: Field required"


def thinking_enabled(body: Mapping[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")


def validate_cache_control(path: str, block: Mapping[str, Any], errors: list[str]) -> None:
    value = block.get("cache_control")
    if value is None:
        return
    if not isinstance(value, Mapping) or value.get("type") != "ephemeral":
        errors.append(f"{path}.cache_control.type: Input should be 'ephemeral'")
        return
    errors.extend(extra(f"{path}.cache_control.{key}") for key in value if key not in ("type", "ttl"))


def validate_text_block(path: str, block: Mapping[str, Any], errors: list[str]) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        errors.append(
            required(f"{path}.text") if "text" not in block else f"{path}.text: Input should be a valid string"
        )
    elif not text:
        errors.append(f"{path}.text: text content blocks must be non-empty")


def validate_system(system: object, errors: list[str]) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        errors.append("system: Input should be a valid string or list of text blocks")
        return
    for n, block in enumerate(system):
        path = f"system.{n}"
        if not isinstance(block, Mapping) or block.get("type") != "text":
            errors.append(f"{path}.type: Input should be 'text'")
            continue
        errors.extend(extra(f"{path}.{key}") for key in block if key not in TEXT_KEYS)
        validate_text_block(path, block, errors)
        validate_cache_control(path, block, errors)


def validate_tools(tools: object, errors: list[str]) -> set[str]:
    names: set[str] = set()
    if tools is None:
        return names
    if not isinstance(tools, list):
        errors.append("tools: Input should be a valid list")
        return names
    for n, tool in enumerate(tools):
        path = f"tools.{n}"
        if not isinstance(tool, Mapping):
            errors.append(f"{path}: Input should be a valid dictionary")
            continue
        errors.extend(extra(f"{path}.{key}") for key in tool if key not in TOOL_KEYS)
        if tool.get("type") not in (None, "custom"):
            errors.append(f"{path}.type: Input should be 'custom'")
        name = tool.get("name")
        if not isinstance(name, str):
            errors.append(required(f"{path}.name"))
        elif not TOOL_NAME_RE.match(name):
            errors.append(f"{path}.name: String should match pattern '{TOOL_NAME_RE.pattern}'")
        elif name in names:
            errors.append("tools: Tool names must be unique.")
        else:
            names.add(name)
        if "input_schema" not in tool:
            errors.append(required(f"{path}.input_schema"))
        else:
            _validate_schema_root(f"{path}.input_schema", tool["input_schema"], False, errors)
        validate_cache_control(path, tool, errors)
    return names


def validate_tool_choice(choice: object, names: set[str], errors: list[str]) -> None:
    if choice is None:
        return
    kinds = {"auto": {"type", "disable_parallel_tool_use"}, "any": {"type", "disable_parallel_tool_use"},
             "tool": {"type", "name", "disable_parallel_tool_use"}, "none": {"type"}}  # fmt: skip
    if not isinstance(choice, Mapping) or choice.get("type") not in kinds:
        errors.append("tool_choice: Input tag does not match any of the expected tags: 'auto', 'any', 'tool', 'none'")
        return
    errors.extend(extra(f"tool_choice.{choice['type']}.{key}") for key in choice if key not in kinds[choice["type"]])
    if choice["type"] == "tool" and choice.get("name") not in names:
        errors.append(f"tool_choice: Tool '{choice.get('name')}' not found in 'tools'.")


def validate_thinking(body: Mapping[str, Any], errors: list[str]) -> None:
    thinking = body.get("thinking")
    if thinking is None:
        return
    # ``block_binding`` as the SDK types it (``BetaThinkingBlockBindingParam``, on enabled and adaptive thinking).
    kinds = {"enabled": {"type", "budget_tokens", "display", "block_binding"}, "disabled": {"type"},
             "adaptive": {"type", "display", "block_binding"}}  # fmt: skip
    if not isinstance(thinking, Mapping) or thinking.get("type") not in kinds:
        errors.append("thinking: Input tag does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'")
        return
    kind = thinking["type"]
    errors.extend(extra(f"thinking.{kind}.{key}") for key in thinking if key not in kinds[kind])
    binding = thinking.get("block_binding")
    if binding is not None and not isinstance(binding, Mapping):
        errors.append(f"thinking.{kind}.block_binding: Input should be a valid dictionary")
    elif binding is not None:
        errors.extend(extra(f"thinking.{kind}.block_binding.{key}") for key in binding
                      if key != "prefix_mismatch_behavior")  # fmt: skip
        if binding.get("prefix_mismatch_behavior") not in (None, "error", "drop_block"):
            errors.append(f"thinking.{kind}.block_binding.prefix_mismatch_behavior: Input should be 'error' or "
                          "'drop_block'")  # fmt: skip
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or isinstance(budget, bool):
            errors.append(required("thinking.enabled.budget_tokens"))
        elif budget < MIN_THINKING_BUDGET:
            errors.append(
                f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_THINKING_BUDGET}"
            )
        elif is_int(body.get("max_tokens")) and body["max_tokens"] <= budget:
            errors.append("`max_tokens` must be greater than `thinking.budget_tokens`.")
    if kind == "disabled":
        return
    if body.get("temperature") not in (None, 1):
        errors.append("`temperature` may only be set to 1 when thinking is enabled.")
    if body.get("top_k") is not None:
        errors.append("`top_k` may not be set when thinking is enabled.")
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("type") in ("any", "tool"):
        errors.append("Thinking may not be enabled when tool_choice forces tool use.")


# The effort levels of the models known to take fewer than all five. ``xhigh`` came with claude-opus-4-7 (coder/coder
# PR #24439); claude-opus-4-6 refused it as "This model does not support effort level 'xhigh'. Supported levels:
# high, low, max, medium." (pydantic/pydantic-ai's cassette test_anthropic_explicit_effort_xhigh_unsupported_model_
# errors), and claude-sonnet-4-6 with it, both taking ``max`` (SkillfulAgents/SuperAgent PR #1142, checked live).
EFFORT_LEVELS = {
    "claude-opus-4-6": ("high", "low", "max", "medium"),
    "claude-sonnet-4-6": ("high", "low", "max", "medium"),
}


def validate_output_config(config: object, errors: list[str], model: object = None) -> None:
    if config is None:
        return
    if not isinstance(config, Mapping):
        errors.append("output_config: Input should be a valid dictionary")
        return
    errors.extend(extra(f"output_config.{key}") for key in config if key not in ("effort", "format"))
    effort = config.get("effort")
    if effort not in (None, "low", "medium", "high", "xhigh", "max"):
        errors.append("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
    elif effort is not None and (levels := _effort_levels(model)) is not None and effort not in levels:
        errors.append(f"This model does not support effort level '{effort}'. Supported levels: {', '.join(levels)}.")
    fmt = config.get("format")
    if fmt is None:
        return
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        errors.append("output_config.format.type: Input should be 'json_schema'")
        return
    errors.extend(extra(f"output_config.format.{key}") for key in fmt if key not in ("type", "schema"))
    if "schema" not in fmt:
        errors.append(required("output_config.format.schema"))
    else:
        _validate_schema_root("output_config.format.schema", fmt["schema"], False, errors)
        errors.extend(dict.fromkeys(_open_objects(fmt["schema"])))


def _open_objects(schema: object) -> list[str]:
    """The API's refusal of each object (sub)schema that is not closed: "For 'object' type,
    'additionalProperties' must be explicitly set to false" (recorded in veryfront/veryfront-code #3918 and
    ax-llm/ax #458); an explicit ``true``: "'additionalProperties: true' is not supported" (BerriAI/litellm
    #35808). Anthropic's structured outputs guide lists ``additionalProperties`` "must be set to false"."""
    found: list[str] = []
    if isinstance(schema, list):
        for item in schema:
            found.extend(_open_objects(item))
        return found
    if not isinstance(schema, Mapping):
        return found
    if schema.get("type") == "object" or (isinstance(schema.get("type"), list) and "object" in schema["type"]):
        closed = schema.get("additionalProperties", None)
        if closed is None:
            found.append("output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly "
                         "set to false")  # fmt: skip
        elif closed is not False:
            found.append("output_config.format.schema: For 'object' type, 'additionalProperties: true' is not "
                         "supported. Please set 'additionalProperties' to false")  # fmt: skip
    for key in ("properties", "$defs", "definitions"):
        if isinstance(schema.get(key), Mapping):
            found.extend(_open_objects(list(schema[key].values())))
    for key in ("items", "anyOf", "allOf", "oneOf", "prefixItems"):
        if key in schema:
            found.extend(_open_objects(schema[key]))
    return found


def _effort_levels(model: object) -> tuple[str, ...] | None:
    """The effort levels ``model`` (or a dated snapshot of it) takes, when it is known to take fewer than all."""
    if not isinstance(model, str):
        return None
    return next((levels for name, levels in EFFORT_LEVELS.items() if model == name or model.startswith(f"{name}-")),
                None)  # fmt: skip
