"""Strict validation of Anthropic Messages request bodies (``/v1/messages``), mirroring the API's own checks.

Each rule is worded as the API words its error (``path: problem``). What the server must remember between
requests is what it issued: the thinking blocks it sent (by signature) and which ``tool_use`` came with which
of them, so a tool-use continuation without its thinking block, or with a changed one, is refused.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .rules_options import TOOL_NAME_RE, _validate_schema_root
from .wording import is_int, is_number

__all__ = ["IssuedThinking", "thinking_enabled", "validate_messages_request"]

KNOWN_PARAMS: frozenset[str] = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "stream",
        "metadata",
        "service_tier",
        "output_config",
        "cache_control",
        "container",
        "inference_geo",
        "speed",
    }
)
BLOCK_KEYS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "title", "context", "citations", "cache_control"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
USER_BLOCKS = ("text", "image", "document", "tool_result")
ASSISTANT_BLOCKS = ("text", "tool_use", "thinking", "redacted_thinking")
TOOL_KEYS = frozenset({"name", "description", "input_schema", "cache_control", "type", "strict"})
MAX_CACHE_POINTS = 4
MIN_THINKING_BUDGET = 1024


def extra(path: str) -> str:
    return f"{path}: Extra inputs are not permitted"


def required(path: str) -> str:
    return f"{path}: Field required"


def thinking_enabled(body: Mapping[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")


@dataclass
class IssuedThinking:
    """The thinking blocks the server sent, by signature (their text), and per ``tool_use`` id the signature of
    the thinking block it came with."""

    blocks: dict[str, str] = field(default_factory=dict)
    calls: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, signature: str, thinking: str, call_ids: list[str]) -> None:
        with self.lock:
            self.blocks[signature] = thinking
            for call_id in call_ids:
                self.calls[call_id] = signature


def validate_messages_request(
    body: object, issued: IssuedThinking | None = None, headers: Mapping[str, str] | None = None
) -> list[str]:
    """Return the errors the Messages API would report for this body; empty means valid."""
    if headers is not None and not headers.get("anthropic-version"):
        return ["anthropic-version: header is required"]
    if not isinstance(body, Mapping):
        return ["Input should be a valid dictionary or object to extract fields from"]
    issued = issued if issued is not None else IssuedThinking()
    errors = [extra(key) for key in body if key not in KNOWN_PARAMS]
    if not isinstance(body.get("model"), str) or not body.get("model"):
        errors.append(required("model") if "model" not in body else "model: Input should be a valid string")
    max_tokens = body.get("max_tokens")
    if "max_tokens" not in body:
        errors.append(required("max_tokens"))
    elif not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        errors.append("max_tokens: Input should be a valid integer greater than or equal to 1")
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        errors.append("stream: Input should be a valid boolean")
    if body.get("stop_sequences") is not None and not (
        isinstance(body["stop_sequences"], list) and all(isinstance(s, str) for s in body["stop_sequences"])
    ):
        errors.append("stop_sequences: Input should be a valid list of strings")
    for key in ("temperature", "top_p"):
        if body.get(key) is not None and not (is_number(body[key]) and 0 <= body[key] <= 1):
            errors.append(f"{key}: Input should be a number between 0 and 1")
    _validate_system(body.get("system"), errors)
    names = _validate_tools(body.get("tools"), errors)
    _validate_tool_choice(body.get("tool_choice"), names, errors)
    _validate_thinking(body, errors)
    _validate_output_config(body.get("output_config"), errors)
    _validate_messages(body, issued, errors)
    points = _cache_points(body)
    if points > MAX_CACHE_POINTS:
        errors.append(f"A maximum of {MAX_CACHE_POINTS} blocks with cache_control may be provided. Found {points}.")
    return errors


def _validate_cache_control(path: str, block: Mapping[str, Any], errors: list[str]) -> None:
    value = block.get("cache_control")
    if value is None:
        return
    if not isinstance(value, Mapping) or value.get("type") != "ephemeral":
        errors.append(f"{path}.cache_control.type: Input should be 'ephemeral'")
        return
    errors.extend(extra(f"{path}.cache_control.{key}") for key in value if key not in ("type", "ttl"))


def _validate_text_block(path: str, block: Mapping[str, Any], errors: list[str]) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        errors.append(
            required(f"{path}.text") if "text" not in block else f"{path}.text: Input should be a valid string"
        )
    elif not text:
        errors.append(f"{path}.text: text content blocks must be non-empty")


def _validate_system(system: object, errors: list[str]) -> None:
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
        errors.extend(extra(f"{path}.{key}") for key in block if key not in BLOCK_KEYS["text"])
        _validate_text_block(path, block, errors)
        _validate_cache_control(path, block, errors)


def _validate_tools(tools: object, errors: list[str]) -> set[str]:
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
        _validate_cache_control(path, tool, errors)
    return names


def _validate_tool_choice(choice: object, names: set[str], errors: list[str]) -> None:
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


def _validate_thinking(body: Mapping[str, Any], errors: list[str]) -> None:
    thinking = body.get("thinking")
    if thinking is None:
        return
    kinds = {"enabled": {"type", "budget_tokens", "display"}, "disabled": {"type"}, "adaptive": {"type", "display"}}
    if not isinstance(thinking, Mapping) or thinking.get("type") not in kinds:
        errors.append("thinking: Input tag does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'")
        return
    kind = thinking["type"]
    errors.extend(extra(f"thinking.{kind}.{key}") for key in thinking if key not in kinds[kind])
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


def _validate_output_config(config: object, errors: list[str]) -> None:
    if config is None:
        return
    if not isinstance(config, Mapping):
        errors.append("output_config: Input should be a valid dictionary")
        return
    errors.extend(extra(f"output_config.{key}") for key in config if key not in ("effort", "format"))
    if config.get("effort") not in (None, "low", "medium", "high", "xhigh", "max"):
        errors.append("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
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


# --- messages ---------------------------------------------------------------------------------------


def _validate_messages(body: Mapping[str, Any], issued: IssuedThinking, errors: list[str]) -> None:
    messages = body.get("messages")
    if messages is None:
        errors.append(required("messages"))
        return
    if not isinstance(messages, list):
        errors.append("messages: Input should be a valid list")
        return
    thinking = thinking_enabled(body)
    previous_calls: list[str] = []  # the tool_use ids of the assistant message just before, not answered yet
    previous_role: object = None
    for n, message in enumerate(messages):
        path = f"messages.{n}"
        if not isinstance(message, Mapping):
            errors.append(f"{path}: Input should be a valid dictionary")
            continue
        errors.extend(extra(f"{path}.{key}") for key in message if key not in ("role", "content"))
        role = message.get("role")
        if role not in ("user", "assistant"):
            errors.append(f"{path}.role: Input should be 'user' or 'assistant'")
            continue
        if n == 0 and role != "user":
            errors.append('messages: first message must use the "user" role')
        elif role == previous_role:
            errors.append(f'messages: roles must alternate between "user" and "assistant", but found multiple '
                          f'"{role}" roles in a row')  # fmt: skip
        blocks = _blocks(path, message.get("content"), USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS, errors)
        if role == "user":
            _check_results(path, blocks, previous_calls, errors)
            previous_calls = []
        else:
            previous_calls = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            _check_thinking(path, blocks, issued, thinking, errors)
        previous_role = role
    if previous_calls and messages and isinstance(messages[-1], Mapping) and messages[-1].get("role") == "assistant":
        # A final assistant message is a prefill: its tool calls cannot be answered in it.
        errors.append(f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks "
                      f"immediately after: {', '.join(previous_calls)}. Each `tool_use` block must have a "
                      "corresponding `tool_result` block in the next message.")  # fmt: skip


def _blocks(path: str, content: object, allowed: tuple[str, ...], errors: list[str]) -> list[Mapping[str, Any]]:
    """A message's content blocks (a string is one text block), each checked for its type and keys."""
    if isinstance(content, str):
        if not content:
            errors.append(f"{path}: all messages must have non-empty content except for the optional final "
                          "assistant message")  # fmt: skip
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        errors.append(f"{path}.content: Input should be a valid string or a non-empty list of content blocks")
        return []
    blocks: list[Mapping[str, Any]] = []
    for m, block in enumerate(content):
        where = f"{path}.content.{m}"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind not in allowed:
            errors.append(f"{where}.type: Input tag '{kind}' found using 'type' does not match any of the expected "
                          f"tags: {', '.join(repr(k) for k in allowed)}")  # fmt: skip
            continue
        assert isinstance(block, Mapping)
        errors.extend(extra(f"{where}.{kind}.{key}") for key in block if key not in BLOCK_KEYS[kind])
        _validate_cache_control(where, block, errors)
        if kind == "text":
            _validate_text_block(where, block, errors)
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not block.get("id"):
                errors.append(required(f"{where}.id"))
            if not isinstance(block.get("name"), str) or not block.get("name"):
                errors.append(required(f"{where}.name"))
            if not isinstance(block.get("input"), Mapping):
                errors.append(f"{where}.input: Input should be a valid dictionary")
        elif kind == "tool_result":
            if block.get("is_error") is not None and not isinstance(block["is_error"], bool):
                errors.append(f"{where}.is_error: Input should be a valid boolean")
            if not isinstance(block.get("content", ""), str | list):
                errors.append(f"{where}.content: Input should be a valid string or list")
        elif kind == "thinking":
            for key in ("thinking", "signature"):
                if not isinstance(block.get(key), str):
                    errors.append(required(f"{where}.{key}"))
        elif kind == "redacted_thinking" and not isinstance(block.get("data"), str):
            errors.append(required(f"{where}.data"))
        blocks.append(block)
    return blocks


def _check_results(path: str, blocks: list[Mapping[str, Any]], calls: list[str], errors: list[str]) -> None:
    """Every ``tool_result`` answers a ``tool_use`` of the assistant message just before; every such
    ``tool_use`` is answered here, the results first."""
    answered: list[str] = []
    for m, block in enumerate(blocks):
        if block.get("type") != "tool_result":
            continue
        call_id = block.get("tool_use_id")
        if call_id not in calls:
            errors.append(f"{path}.content.{m}: unexpected `tool_use_id` found in `tool_result` blocks: {call_id}. "
                          "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
                          "message.")  # fmt: skip
        elif any(b.get("type") != "tool_result" for b in blocks[:m]):
            errors.append(f"{path}.content.{m}: `tool_result` blocks must come before any other content in a user "
                          "message.")  # fmt: skip
        answered.append(str(call_id))
    missing = [call_id for call_id in calls if call_id not in answered]
    if missing:
        errors.append(f"{path}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                      f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` "
                      "block in the next message.")  # fmt: skip


def _check_thinking(
    path: str, blocks: list[Mapping[str, Any]], issued: IssuedThinking, thinking: bool, errors: list[str]
) -> None:
    """Thinking blocks come back unchanged; with thinking on, an answer whose tool calls came with a thinking
    block starts with that block."""
    for m, block in enumerate(blocks):
        if block.get("type") == "thinking":
            signature = block.get("signature")
            if m > 0 and any(b.get("type") not in ("thinking", "redacted_thinking") for b in blocks[:m]):
                errors.append(f"{path}.content.{m}: `thinking` blocks must come first in an assistant message")
            if not isinstance(signature, str) or issued.blocks.get(signature) != block.get("thinking"):
                errors.append(f"{path}.content.{m}: Invalid `signature` in `thinking` block")
    if not thinking:
        return
    for block in blocks:
        needed = issued.calls.get(str(block.get("id"))) if block.get("type") == "tool_use" else None
        if needed is None:
            continue
        first = blocks[0]
        if first.get("type") not in ("thinking", "redacted_thinking"):
            errors.append(f"{path}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                          f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must start "
                          "with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
                          "blocks). We recommend you include thinking blocks from previous turns.")  # fmt: skip
        elif first.get("type") == "thinking" and first.get("signature") != needed:
            errors.append(f"{path}.content.0: Invalid `signature` in `thinking` block")
        return


def _cache_points(body: Mapping[str, Any]) -> int:
    """How many blocks of the request carry ``cache_control``."""
    count = 0
    for group in (body.get("tools"), body.get("system")):
        if isinstance(group, list):
            count += sum(1 for b in group if isinstance(b, Mapping) and b.get("cache_control") is not None)
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, Mapping) and b.get("cache_control") is not None)
    return count
