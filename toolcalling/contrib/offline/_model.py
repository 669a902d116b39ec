"""Offline demo model: a deterministic keyword matcher that answers like a chat model without an API key."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from ...testing import Reply, ToolCall, mock_transport
from ...testing.bodies import chat_messages
from . import _sentences as sentences
from . import _text as tx

OFFLINE_BASE_URL = "http://offline.toolcalling.invalid/v1"
# What offline answers are stored with (Message.model), whatever MODEL says, so no reader of the history
# mistakes them for a real model's.
OFFLINE_MODEL_NAME = "offline"


class OfflineModel:
    """Responder that imitates a tool-calling model with keyword matching, deterministically.

    It calls the offered tool whose name, description and parameters best match the user's
    words, fills arguments it can find in the text, and summarises tool results in plain text.
    """

    model_name = OFFLINE_MODEL_NAME

    def __call__(self, body: dict[str, Any]) -> Reply:
        reply = self._answer(body)
        reply.model = self.model_name
        return reply

    def _answer(self, body: dict[str, Any]) -> Reply:
        messages: Sequence[Mapping[str, Any]] = chat_messages(body)  # a request of any of the three APIs
        functions = self._offered_functions(body)
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return Reply(content=self._summarise_results(messages))
        if last.get("role") != "user":
            return Reply(content=self._capabilities(functions))
        text = tx.message_text(last)

        forced: str | None = None
        choice = body.get("tool_choice")
        if isinstance(choice, Mapping):
            forced = (choice.get("function") or choice).get("name")  # either API's form
        candidates = [f for f in functions if forced is None or f.get("name") == forced]
        best = self._best_tool(text, candidates, require_match=forced is None and choice != "required")
        if best is None:
            return Reply(content=self._capabilities(functions))

        arguments, question = self._fill_arguments(best, text)
        if question is not None:
            return Reply(content=question)
        call_id = self._call_id(messages, best["name"], arguments)
        return Reply(tool_calls=[ToolCall(id=call_id, name=best["name"], arguments=json.dumps(arguments))])

    # --- choosing a tool ------------------------------------------------------------------------

    @staticmethod
    def _offered_functions(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        if body.get("tool_choice") == "none":
            return []
        functions: list[Mapping[str, Any]] = []
        for tool in body.get("tools") or []:
            if isinstance(tool, Mapping) and "input_schema" in tool:  # an Anthropic tool: its schema by another name
                functions.append({**tool, "parameters": tool["input_schema"]})
                continue
            if not isinstance(tool, Mapping) or tool.get("type") != "function":
                continue
            if isinstance(tool.get("function"), Mapping):
                functions.append(tool["function"])
            elif isinstance(tool.get("name"), str):  # a Responses function tool: the same fields, one level up
                functions.append(tool)
        return functions

    @staticmethod
    def _tool_vocabulary(function: Mapping[str, Any]) -> dict[str, int]:
        weights: dict[str, int] = {}

        def add(text: str, weight: int) -> None:
            for word in tx.keywords(text):
                weights[word] = max(weights.get(word, 0), weight)

        add(tx.split_identifier(function.get("name", "")), tx.NAME_WEIGHT)
        add(str(function.get("description") or ""), tx.TEXT_WEIGHT)
        properties = (function.get("parameters") or {}).get("properties") or {}
        for param, schema in properties.items():
            add(tx.split_identifier(param), tx.PARAM_NAME_WEIGHT)
            if isinstance(schema, Mapping):
                add(str(schema.get("description") or ""), tx.TEXT_WEIGHT)
                for value in schema.get("enum") or []:
                    add(str(value), tx.TEXT_WEIGHT)
        return weights

    def _score(self, text: str, function: Mapping[str, Any]) -> int:
        vocabulary = self._tool_vocabulary(function)
        score = sum(vocabulary.get(word, 0) for word in set(tx.keywords(text)))
        properties = (function.get("parameters") or {}).get("properties") or {}
        for schema in properties.values():
            pattern = tx.value_pattern(schema) if isinstance(schema, Mapping) else None
            if pattern and re.search(rf"(?<![\w-]){pattern}(?![\w-])", text):
                # A value shaped exactly like this tool's argument is strong evidence.
                score += tx.PATTERN_BONUS
                break
        return score

    def _best_tool(
        self, text: str, functions: Sequence[Mapping[str, Any]], *, require_match: bool
    ) -> Mapping[str, Any] | None:
        best: Mapping[str, Any] | None = None
        best_score = -1
        for function in functions:
            score = self._score(text, function)
            if score > best_score:  # strict ">" keeps the first-offered tool on ties
                best, best_score = function, score
        if best is None or (require_match and best_score < tx.MIN_SCORE):
            return None
        return best

    # --- arguments ------------------------------------------------------------------------------

    def _fill_arguments(self, function: Mapping[str, Any], text: str) -> tuple[dict[str, Any], str | None]:
        parameters = function.get("parameters") or {}
        properties: Mapping[str, Any] = parameters.get("properties") or {}
        required = [name for name in parameters.get("required") or [] if name in properties]
        spans = tx.Spans()
        found: dict[str, Any] = {}
        schemas = {name: s for name, s in properties.items() if isinstance(s, Mapping)}

        # Most specific evidence first, so a loose rule cannot steal text a precise one needs.
        for name, schema in schemas.items():
            if tx.first_type(schema) == "string" and "enum" not in schema:
                pattern = tx.value_pattern(schema)
                if pattern:
                    value = self._take_match(rf"(?<![\w-]){pattern}(?![\w-])", text, spans)
                    if value is not None:
                        found[name] = value
        for name, schema in schemas.items():
            if name not in found and isinstance(schema.get("enum"), list):
                value = self._match_enum(schema["enum"], text, spans)
                if value is not None:
                    found[name] = value
        quoted = [m for m in tx.QUOTED_RE.finditer(text)]
        for name, schema in schemas.items():
            if name in found or tx.first_type(schema) != "string" or "enum" in schema:
                continue
            for match in quoted:
                if spans.free(*match.span()):
                    spans.take(*match.span())
                    found[name] = next(group for group in match.groups() if group is not None)
                    break
        for name, schema in schemas.items():
            kind = tx.first_type(schema)
            if name not in found and kind in ("integer", "number"):
                number = self._take_number(schema, kind, text, spans)
                if number is not None:
                    found[name] = number
        name_words = set(tx.keywords(tx.split_identifier(function.get("name", ""))))
        for name, schema in schemas.items():
            if name not in found and tx.first_type(schema) == "string" and tx.is_query_param(name):
                words = [
                    match.group().strip("'-")
                    for match in tx.WORD_RE.finditer(text)
                    if spans.free(*match.span()) and self._is_query_word(match.group(), name_words)
                ]
                if words:
                    found[name] = " ".join(words)
        for name in required:
            if name not in found and tx.first_type(schemas.get(name, {})) == "boolean":
                found[name] = False

        for name in required:
            if name not in found:
                return {}, self._ask_for(name, schemas.get(name, {}))
        # Keep the declared parameter order so the JSON reads naturally.
        return {name: found[name] for name in properties if name in found}, None

    @staticmethod
    def _is_query_word(word: str, name_words: set[str]) -> bool:
        # Words that only restate the tool's own name ("search", "products") are not the query.
        if word.isdigit():
            return True
        keywords = set(tx.keywords(word))
        return bool(keywords) and not keywords <= name_words

    @staticmethod
    def _take_match(pattern: str, text: str, spans: tx.Spans) -> str | None:
        for match in re.finditer(pattern, text):
            if spans.free(*match.span()):
                spans.take(*match.span())
                return match.group()
        return None

    @staticmethod
    def _match_enum(options: list[Any], text: str, spans: tx.Spans) -> Any:
        lowered = text.lower()
        for option in options:
            needle = str(option).lower()
            for match in re.finditer(rf"(?<!\w){re.escape(needle)}(?!\w)", lowered):
                if spans.free(*match.span()):
                    spans.take(*match.span())
                    return option
        return None

    @staticmethod
    def _take_number(schema: Mapping[str, Any], kind: str, text: str, spans: tx.Spans) -> int | float | None:
        for match in tx.NUMBER_RE.finditer(text):
            if not spans.free(*match.span()):
                continue
            raw = match.group()
            if kind == "integer" and "." in raw:
                continue
            value: int | float = int(raw) if kind == "integer" else (float(raw) if "." in raw else int(raw))
            minimum, maximum = schema.get("minimum"), schema.get("maximum")
            if (isinstance(minimum, int | float) and value < minimum) or (
                isinstance(maximum, int | float) and value > maximum
            ):
                continue
            spans.take(*match.span())
            return value
        return None

    @staticmethod
    def _ask_for(name: str, schema: Mapping[str, Any]) -> str:
        if tx.is_query_param(name):
            return _("What should I look up?")
        label = ""
        description = schema.get("description")
        if isinstance(description, str):
            label = re.split(r",|;|\.\s|\(|\be\.g\.|\bfor example\b| - ", description, maxsplit=1)[0].strip()
        if not label or len(label.split()) > 6:
            words = tx.split_identifier(name).lower().split()
            label = " ".join(tx.ABBREVIATIONS.get(word, word) for word in words)
        if not label.isupper():
            label = label[:1].lower() + label[1:]
        example = tx.example_text(schema)
        if isinstance(schema.get("enum"), list):
            options = ", ".join(str(option) for option in schema["enum"])
            return pgettext("toolcalling offline", "Which %(label)s (%(options)s)?") % {
                "label": label,
                "options": options,
            }
        if example:
            return _("Which %(label)s (e.g. %(example)s)?") % {"label": label, "example": example}
        return pgettext("toolcalling offline", "Which %(label)s?") % {"label": label}

    @staticmethod
    def _call_id(messages: Sequence[Mapping[str, Any]], name: str, arguments: Mapping[str, Any]) -> str:
        # Derived from the conversation so replays are deterministic, yet ids differ between
        # conversations, as stored histories may rely on their uniqueness.
        digest = hashlib.sha256(
            json.dumps([list(messages), name, arguments], sort_keys=True, default=str).encode()
        ).hexdigest()
        return f"call_{digest[:24]}"

    # --- text answers ---------------------------------------------------------------------------

    @staticmethod
    def _capabilities(functions: Sequence[Mapping[str, Any]]) -> str:
        intro = _("I'm the offline demo model (no API key is configured), so I can only match your words to a tool.")
        if not functions:
            return f"{intro} " + _("No tools are available here, so there is nothing I can do for you.")
        lines = []
        for function in functions[: tx.MAX_CAPABILITIES]:
            description = str(function.get("description") or "").strip()
            first_sentence = re.split(r"(?<=[.!?])\s", description, maxsplit=1)[0] if description else ""
            lines.append(f"- {first_sentence or tx.split_identifier(function.get('name', ''))}")
        if len(functions) > tx.MAX_CAPABILITIES:
            lines.append(
                "- "
                + pgettext("toolcalling offline", "and %(count)d more")
                % {"count": len(functions) - tx.MAX_CAPABILITIES}
            )
        return f"{intro} " + _("Try asking about one of these:") + "\n" + "\n".join(lines)

    def _summarise_results(self, messages: Sequence[Mapping[str, Any]]) -> str:
        start = len(messages)
        while start > 0 and messages[start - 1].get("role") == "tool":
            start -= 1
        results = messages[start:]
        names: dict[str, str] = {}
        if start > 0:
            for call in messages[start - 1].get("tool_calls") or []:
                names[call.get("id", "")] = (call.get("function") or {}).get("name", "tool")
        blocks: list[list[str]] = []
        for result in results:
            name = names.get(result.get("tool_call_id", ""), "tool")
            blocks.append(sentences.describe(name, tx.message_text(result), named=len(results) > 1))
        if len(blocks) == 1:
            lines = blocks[0]
        else:
            lines = []
            for result, block in zip(results, blocks, strict=True):
                lines.append(f"{sentences.tool_label(names.get(result.get('tool_call_id', ''), 'tool'))}:")
                lines.extend(f"  {line}" for line in block)
        if len(lines) > tx.MAX_SUMMARY_LINES:
            hidden = len(lines) - tx.MAX_SUMMARY_LINES
            more = ngettext("… and %(count)d more line", "… and %(count)d more lines", hidden) % {"count": hidden}
            lines = [*lines[: tx.MAX_SUMMARY_LINES], more]
        return "\n".join(lines)


def offline_http_client() -> httpx2.Client:
    """An httpx2 client whose requests are answered in-process by the offline model.

    Pass it as ``openai.OpenAI(base_url=OFFLINE_BASE_URL, api_key=..., http_client=...)`` so the demo
    runs through the real SDK code path with no network and no key.
    """
    return httpx2.Client(transport=mock_transport(OfflineModel()))
