"""Strict validation of Anthropic Messages request bodies (``/v1/messages``), mirroring the API's own checks.

Each rule is worded as the API words its error (``path: problem``). What the server must remember between
requests is what it issued: the thinking blocks it sent (by signature), which ``tool_use`` came with which
of them, and the answers they came in, so a tool-use continuation without its thinking block, with a changed
one, or with its latest answer's blocks moved, is refused.

Where each rule's text was observed (the API's answers quoted in public threads):
- a ``tool_use`` not answered in the next message: "messages.N: `tool_use` ids were found without `tool_result`
  blocks immediately after: …" (anthropics/claude-code #1237, langchain-ai/langgraph #5109);
- a ``tool_result`` for no ``tool_use`` just before: "messages.N.content.M: unexpected `tool_use_id` found in
  `tool_result` blocks: …" (anthropics/claude-code #13460, router-for-me/CLIProxyAPI #497);
- more than four cache points: "A maximum of 4 blocks with cache_control may be provided. Found 5."
  (tghamm/Anthropic.SDK #50, continuedev/continue PR #6937);
- thinking: see ``_check_thinking`` and ``_check_unmodified``; a thinking block of another model is not refused
  (unlike a Responses reasoning item, see ``_check_thinking``); on the models with preserved thinking, a block
  whose prefix changed is refused, or dropped with ``drop_block`` (``rules_anthropic_binding``);
- the field names and types (``KNOWN_PARAMS``, ``BLOCK_KEYS``) and the roles: the Messages API reference as the
  ``anthropic`` SDK types it (``MessageCreateParams``), worded as the API words validation errors;
- consecutive turns of one role are not refused but combined into one, then checked ("Consecutive `user` or
  `assistant` turns in your request will be combined into a single turn", the SDK's documentation of ``messages``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import rules_files as files
from .rules_anthropic_binding import check_binding, issued_prefixes
from .rules_anthropic_options import (
    extra,
    required,
    thinking_enabled,
    validate_cache_control,
    validate_output_config,
    validate_system,
    validate_text_block,
    validate_thinking,
    validate_tool_choice,
    validate_tools,
)
from .wording import is_number

__all__ = ["IssuedThinking", "binding_transformations", "thinking_enabled", "validate_messages_request"]

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
MAX_CACHE_POINTS = 4


@dataclass
class IssuedThinking:
    """The thinking blocks the server sent, by signature (their text); per ``tool_use`` id the signature of
    the thinking block it came with; and per thinking block (its signature, or a redacted block's data) the
    answer it came in, as the keys of its blocks in order (``block_key``); on a model with preserved thinking,
    per thinking block the digest of the prefix it is bound to (``rules_anthropic_binding``)."""

    blocks: dict[str, str] = field(default_factory=dict)
    calls: dict[str, str] = field(default_factory=dict)
    answers: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    prefixes: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, signature: str, thinking: str, call_ids: list[str]) -> None:
        with self.lock:
            self.blocks[signature] = thinking
            for call_id in call_ids:
                self.calls[call_id] = signature

    def record(self, content: list[dict[str, Any]], body: Mapping[str, Any] | None = None) -> None:
        """Remember an answer's content blocks: each thinking block, the answer each came in, and (``body``: the
        request it answers) the prefix each is bound to."""
        keys = [block_key(block) for block in content]
        messages = body.get("messages") if body is not None else None
        prefixes = issued_prefixes(body, _combined(messages), content) if body and isinstance(messages, list) else {}
        with self.lock:
            self.prefixes.update(prefixes)
            first: str | None = None  # the thinking block the answer starts with, which a continuation must too
            for block in content:
                if block.get("type") == "thinking":
                    self.blocks[str(block["signature"])] = block["thinking"]
                    self.answers[str(block["signature"])] = keys
                    first = first or str(block["signature"])
                elif block.get("type") == "redacted_thinking":
                    self.answers[str(block["data"])] = keys
                elif block.get("type") == "tool_use" and first is not None:
                    self.calls[str(block["id"])] = first


def block_key(block: Mapping[str, Any]) -> tuple[str, str]:
    """What identifies a content block of an answer: its type, and its signature, data, id or text."""
    kind = str(block.get("type"))
    for key in ("signature", "data", "id", "text"):
        if isinstance(block.get(key), str):
            return kind, block[key]
    return kind, ""


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
    validate_system(body.get("system"), errors)
    names = validate_tools(body.get("tools"), errors)
    validate_tool_choice(body.get("tool_choice"), names, errors)
    validate_thinking(body, errors)
    validate_output_config(body.get("output_config"), errors, body.get("model"))
    _validate_messages(body, issued, errors)
    if not errors:
        errors.extend(check_binding(body, _combined(body["messages"]), issued.prefixes, headers)[0])
    points = _cache_points(body)
    if points > MAX_CACHE_POINTS:
        errors.append(f"A maximum of {MAX_CACHE_POINTS} blocks with cache_control may be provided. Found {points}.")
    return errors


def binding_transformations(
    body: Mapping[str, Any], issued: IssuedThinking, headers: Mapping[str, str] | None
) -> list[dict[str, str]]:
    """The ``input_transformations`` of a valid request: the thinking blocks ``drop_block`` dropped."""
    return check_binding(body, _combined(body["messages"]), issued.prefixes, headers)[1]


# --- messages ---------------------------------------------------------------------------------------


def _combined(messages: list[Any]) -> list[Any]:
    """The messages as the API reads them: consecutive turns of one role combined into one turn, their content
    blocks in order (a text content is one text block). Messages that are not valid turns stay as they are."""
    turns: list[Any] = []
    for message in messages:
        before = turns[-1] if turns else None
        role = message.get("role") if isinstance(message, Mapping) else None
        if role in ("user", "assistant") and isinstance(before, Mapping) and before.get("role") == role:
            first, then = _as_blocks(before.get("content")), _as_blocks(message.get("content"))
            if first is not None and then is not None:
                turns[-1] = {**before, "content": first + then}
                continue
        turns.append(message)
    return turns


def _as_blocks(content: Any) -> list[Any] | None:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else None


def _validate_messages(body: Mapping[str, Any], issued: IssuedThinking, errors: list[str]) -> None:
    messages = body.get("messages")
    if messages is None:
        errors.append(required("messages"))
        return
    if not isinstance(messages, list):
        errors.append("messages: Input should be a valid list")
        return
    messages = _combined(messages)
    thinking = thinking_enabled(body)
    latest = max((n for n, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "assistant"),
                 default=None)  # fmt: skip
    previous_calls: list[str] = []  # the tool_use ids of the assistant message just before, not answered yet
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
        # No rule that the first message is the user's: claude-sonnet-4-5 answered a conversation that began with
        # the assistant (tests/contract/fixtures/anthropic/first_message_from_the_assistant.json).
        blocks = _blocks(path, message.get("content"), USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS, errors)
        if role == "user":
            _check_results(path, blocks, previous_calls, errors)
            previous_calls = []
        else:
            previous_calls = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            _check_thinking(path, blocks, issued, thinking, errors)
            if n == latest:
                _check_unmodified(path, blocks, issued, errors)
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
        validate_cache_control(where, block, errors)
        if kind == "text":
            validate_text_block(where, block, errors)
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
        elif kind == "image":
            errors.extend(files.source_errors(f"{where}.image", block.get("source"), files.IMAGE_TYPES))
        elif kind == "document":
            errors.extend(files.source_errors(f"{where}.document", block.get("source"), files.DOCUMENT_TYPES))
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
    # Whatever model the request names: the API takes another model's thinking block (and a redacted one) and
    # either reads it or drops it before the model sees it. "When a request carries a block the target model can't
    # read, the API drops it before the model sees it: the request succeeds, and dropped blocks aren't billed."
    # (platform.claude.com, "What's new in Claude Opus 5.5" and "What's new in Claude Sonnet 5.5", "Thinking blocks
    # are tied to the model and the conversation"); earlier, the "Thinking" guide's "Switching models
    # mid-conversation": "Other models silently ignore them rather than rejecting the request, but ignored blocks
    # still add input tokens". Signatures also work across the Claude API, Bedrock and Vertex AI ("Values
    # generated on one platform work on another", same guide, "Thinking encryption"). The "Invalid `signature`"
    # 400s reported after a model switch came through a gateway (anomalyco/opencode #11546, GitHub Copilot) or
    # with Claude Fable 5 (vybestack/llxprt-code #2335), whose early-access builds refused another model's block
    # before launch (Claude API skill, shared/model-migration.md, "Migrating to Claude Fable 5.1"), so no rule
    # binds a block to its model here.
    for m, block in enumerate(blocks):
        if block.get("type") == "thinking":
            signature = block.get("signature")
            # A signature covers its thinking text (Anthropic's extended thinking guide, "Thinking encryption").
            if not isinstance(signature, str) or issued.blocks.get(signature) != block.get("thinking"):
                errors.append(f"{path}.content.{m}: Invalid `signature` in `thinking` block")
    if not thinking:
        return
    for block in blocks:
        needed = issued.calls.get(str(block.get("id"))) if block.get("type") == "tool_use" else None
        if needed is None:
            continue
        first = blocks[0]
        # The API's error text as recorded in deepset-ai/haystack-core-integrations #2146 and mastra-ai/mastra
        # #7799 (a tool-use continuation sent without the thinking block its answer began with).
        if first.get("type") not in ("thinking", "redacted_thinking"):
            errors.append(f"{path}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                          f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must start "
                          "with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
                          "blocks). We recommend you include thinking blocks from previous turns. To avoid this "
                          "requirement, disable `thinking`. Please consult our documentation at "
                          "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")  # fmt: skip
        elif first.get("type") == "thinking" and first.get("signature") != needed:
            errors.append(f"{path}.content.0: Invalid `signature` in `thinking` block")
        return


def _check_unmodified(path: str, blocks: list[Mapping[str, Any]], issued: IssuedThinking, errors: list[str]) -> None:
    """The latest assistant message keeps its thinking blocks where the answer had them: the blocks up to each
    one are the answer's own, in order. Recorded in anthropics/claude-code #19539 and #63203,
    NousResearch/hermes-agent #35975 and BerriAI/litellm #23047 (blocks reordered or dropped around interleaved
    thinking): "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified.
    These blocks must remain as they were in the original response." """
    keys = [block_key(block) for block in blocks]
    for m, block in enumerate(blocks):
        if block.get("type") not in ("thinking", "redacted_thinking"):
            continue
        answer = issued.answers.get(keys[m][1])
        if answer is not None and keys[: m + 1] != answer[: m + 1]:
            errors.append(f"{path}.content.{m}: `thinking` or `redacted_thinking` blocks in the latest assistant "
                          "message cannot be modified. These blocks must remain as they were in the original "
                          "response.")  # fmt: skip
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
