"""Preserved thinking's prefix check: on the models that run it, a thinking block is bound to what came before it.

Sources (platform.claude.com, "Preserved thinking", "Prefix checks on thinking blocks" and "Fix a thinking block
bound to a different conversation"; docs.aws.amazon.com, Bedrock's "Preserved thinking"; the ``anthropic`` SDK's
beta types ``BetaThinkingBlockBindingParam``, ``BetaThinkingDroppedInputTransformation``). Where the English page
was not at hand, its Chinese and Japanese editions were read; what they say is told here, not quoted:

- what is bound: "The top-level ``system`` prompt, ``tools``, and ``messages`` before the block are its prefix. If the
  prefix differs from what you sent when the block was produced, that block and every later thinking block are
  invalid, and the API rejects the request with a 400 error or drops the invalid blocks, whichever you choose."
  (Preserved thinking); "The top-level system prompt, tools, and all message content before the block are unchanged
  from the request that produced it" (Bedrock). A tool use after the block in its own answer is not before it, so an
  edited input there leaves the block valid (and binds the answers after it). A change invalidates only the thinking
  already after it; thinking before it, and thinking produced after it, stays valid (Prefix checks);
- what is compared is the content, read as the API reads it: consecutive turns of one role combined, a string
  content as one text block, objects whatever their key order. ``cache_control`` is left out: "You have nothing to
  change if ... Claude Code, claude.ai, or Claude Managed Agents manages your conversation history", and "Your code
  follows the three habits of an append-only integration" (Prefix checks), habits that say nothing of cache points
  ("Send each assistant turn back exactly as the API returned it", "Build ``system`` and ``tools`` once for each
  conversation, and send that copy every time", and every update in a new message at the end), while a
  conversation's requests move the cache point to the newest block as the prompt caching guide shows. Text is
  compared as it is, whitespace included: no page says whitespace does not count;
- which models: the pages' ``supportedModels`` (claude-fable-5-2, claude-mythos-5-2, claude-fable-5-1,
  claude-mythos-5-1, claude-opus-5-5, claude-sonnet-5-5, claude-haiku-5-5), less Claude Mythos 5.1, which "records
  the same signature but doesn't run it" (Bedrock). This server enforces the check as for an account it is enforced
  on: "The API enforces the prefix check by default for accounts created on or after August 31, 2026, 00:00 UTC."
  (Preserved thinking);
- the refusal: "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different
  conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block"." (Fix
  ...), naming the first block that fails. With ``drop_block`` but no beta header the error asks for the header (Fix
  ..., Chinese edition), worded as quoted in apidog.com's "Claude Fable 5.1 Preserved Thinking": "That setting
  requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header.";
- ``drop_block``: "prefix_mismatch_behavior chooses whether a request that fails the prefix check gets a 400 error or
  the API drops the failing blocks. The response's input_transformations lists thinking blocks the API dropped"
  (Preserved thinking), with the beta header ``anthropic-beta: thinking-binding-controls-2026-08-01`` (Fix ...); each
  entry ``{"type": "thinking_dropped", "path": "messages.{i}.content.{j}", "reason": "prefix_binding_mismatch"}``,
  "the rest of that turn's consecutive thinking blocks are removed with it, each with this reason" (the SDK's types).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["BINDING_BETA", "BOUND_MODELS", "binds_prefix", "check_binding", "issued_prefixes"]

BOUND_MODELS = (
    "claude-fable-5-2",
    "claude-mythos-5-2",
    "claude-fable-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
BINDING_BETA = "thinking-binding-controls-2026-08-01"
THINKING_TYPES = ("thinking", "redacted_thinking")
BOUND = (
    "Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or "
    'set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
NO_HEADER = f"That setting requires the `{BINDING_BETA}` value in the `anthropic-beta` header."


def binds_prefix(model: object) -> bool:
    """Whether ``model`` (an id, perhaps a platform's or a dated one) runs the prefix check."""
    return isinstance(model, str) and any(bound in model for bound in BOUND_MODELS)


def block_id(block: Mapping[str, Any]) -> str:
    """What a thinking block is known by: its signature, or a redacted block's data."""
    return str(block.get("signature") if block.get("type") == "thinking" else block.get("data"))


def _plain(value: Any) -> Any:
    """``value`` without its ``cache_control`` markers, at any depth."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _blocks(content: Any) -> Any:
    """A content as blocks: a string is one text block."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _digest(body: Mapping[str, Any], messages: list[Any], blocks: list[Any]) -> str:
    """The digest of one block's prefix: ``system``, ``tools``, the messages before its own, and the blocks
    before it in its own message."""
    prefix = {
        "system": _blocks(body.get("system")),
        "tools": body.get("tools"),
        "messages": [{**m, "content": _blocks(m.get("content"))} if isinstance(m, Mapping) else m for m in messages],
        "before": blocks,
    }
    text = json.dumps(_plain(prefix), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def issued_prefixes(body: Mapping[str, Any], messages: list[Any], answer: list[dict[str, Any]]) -> dict[str, str]:
    """The prefix digest of each thinking block of ``answer``, the reply to ``body`` (its ``messages`` combined),
    when the model binds them."""
    if not binds_prefix(body.get("model")):
        return {}
    return {block_id(block): _digest(body, messages, answer[:m])
            for m, block in enumerate(answer) if block.get("type") in THINKING_TYPES}  # fmt: skip


def _bound_blocks(messages: list[Any]) -> Iterator[tuple[int, int, Mapping[str, Any]]]:
    for n, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(message, Mapping) and message.get("role") == "assistant" and isinstance(content, list):
            for m, block in enumerate(content):
                if isinstance(block, Mapping) and block.get("type") in THINKING_TYPES:
                    yield n, m, block


def check_binding(
    body: Mapping[str, Any], messages: list[Any], prefixes: Mapping[str, str], headers: Mapping[str, str] | None
) -> tuple[list[str], list[dict[str, str]]]:
    """The refusal of a request that sends back a thinking block whose prefix changed, or with ``drop_block`` (and
    the beta header) the ``input_transformations`` entries of the blocks dropped instead. ``messages``: the body's,
    combined; blocks the server issued on a model that does not bind them are not checked."""
    if not binds_prefix(body.get("model")):
        return [], []
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, Mapping) else None
    behavior = binding.get("prefix_mismatch_behavior") if isinstance(binding, Mapping) else None
    betas = {beta.strip() for beta in ((headers or {}).get("anthropic-beta") or "").split(",")}
    dropped: list[dict[str, str]] = []
    failed_in: int | None = None  # the message whose block failed: the rest of its thinking blocks go with it
    for n, m, block in _bound_blocks(messages):
        bound = prefixes.get(block_id(block))
        if failed_in != n and (bound is None or bound == _digest(body, messages[:n], messages[n]["content"][:m])):
            continue
        path = f"messages.{n}.content.{m}"
        if behavior != "drop_block":
            return [f"{path}: {BOUND}"], []
        if BINDING_BETA not in betas:
            return [f"{path}: {BOUND} {NO_HEADER}"], []
        failed_in = n
        dropped.append({"type": "thinking_dropped", "path": path, "reason": "prefix_binding_mismatch"})
    return [], dropped
