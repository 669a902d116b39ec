"""Reading a request's words for the offline model: keywords, stems, and argument values by pattern."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A tool must share at least this much weighted vocabulary with the request before the offline
# model calls it: one tool-name word (weight 3) is enough, a single description word (1) is not.
MIN_SCORE = 2
NAME_WEIGHT = 3
PARAM_NAME_WEIGHT = 2
TEXT_WEIGHT = 1
PATTERN_BONUS = 2

MAX_SUMMARY_LINES = 15
MAX_VALUE_CHARS = 200
MAX_CAPABILITIES = 8

STOPWORDS = frozenset(
    """
    a an the is are was were be been am i me my mine you your yours we our us it its this that these those
    what whats where wheres when who which how why can could would should will shall may might must do does
    did done please pls tell show give get got for of to in on at by with about from into and or but not no
    any some there here have has had need want let know hi hello hey thanks thank just up out so if then than
    as also too very much many more most all one ok okay yes well im ive id
    """.split()
)

QUERY_PARAM_WORDS = frozenset({"query", "q", "text", "search", "keyword", "keywords", "term", "terms", "phrase"})
QUERY_PARAM_NAMES = frozenset({"topic", "prompt", "question", "message"}) | QUERY_PARAM_WORDS

ABBREVIATIONS = {
    "no": "number",
    "num": "number",
    "nr": "number",
    "qty": "quantity",
    "id": "ID",
    "tz": "time zone",
    "eta": "ETA",
    "sku": "SKU",
}

EXAMPLE_RE = re.compile(
    r"(?:\be\.g\.|\beg\.|\bfor example\b|\bsuch as\b|\blike\b)[:,]?\s*[\"'`]?([^\s\"'`,;()]+)",
    re.IGNORECASE,
)
QUOTED_RE = re.compile(r"\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)|\u201c([^\u201d]+)\u201d|\u2018([^\u2019]+)\u2019")
NUMBER_RE = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])")
WORD_RE = re.compile(r"[\w'-]+")
FORMAT_PATTERNS = {
    "date": r"\d{4}-\d{2}-\d{2}",
    "date-time": r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?",
    "email": r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    "uri": r"https?://[^\s\"'<>]+",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
}


# --- text helpers -------------------------------------------------------------------------------


def stem(word: str) -> str:
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def split_identifier(name: str) -> str:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return re.sub(r"[_\-.]+", " ", spaced)


def keywords(text: str) -> list[str]:
    """Lowercased, stemmed, stopword-free words; digits are left out because they carry no topic."""
    words = (stem(w) for w in re.findall(r"[a-z0-9]+", text.lower().replace("'", "")))
    return [w for w in words if w not in STOPWORDS and not w.isdigit()]


def message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


def first_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "enum" in schema:
        return "enum"
    return kind if isinstance(kind, str) else None


def example_pattern(example: str) -> str | None:
    """Turn an example such as ``20250719-0032`` into a shape regex such as ``\\d{8}-\\d{4}``.

    Plain words are not turned into patterns, as a shape like "five letters" would match
    any word in the request.
    """
    example = example.rstrip(".:!?")
    if not example or example.isalpha():
        return None
    parts: list[str] = []
    for run in re.finditer(r"\d+|[A-Za-z]+|.", example):
        token = run.group()
        if token.isdigit():
            parts.append(rf"\d{{{len(token)}}}")
        elif token.isalpha():
            parts.append("[A-Za-z]+")
        else:
            parts.append(re.escape(token))
    return "".join(parts)


def value_pattern(schema: Mapping[str, Any]) -> str | None:
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        stripped = pattern.removeprefix("^").removesuffix("$")
        try:
            re.compile(stripped)
        except re.error:
            pass
        else:
            return stripped
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMAT_PATTERNS:
        return FORMAT_PATTERNS[fmt]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples and isinstance(examples[0], str | int):
        found = example_pattern(str(examples[0]))
        if found:
            return found
    description = schema.get("description")
    if isinstance(description, str):
        match = EXAMPLE_RE.search(description)
        if match:
            return example_pattern(match.group(1))
    return None


def example_text(schema: Mapping[str, Any]) -> str | None:
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return str(examples[0])
    description = schema.get("description")
    if isinstance(description, str):
        match = EXAMPLE_RE.search(description)
        if match:
            return match.group(1).rstrip(".:!?")
    return None


def is_query_param(name: str) -> bool:
    if name.lower() in QUERY_PARAM_NAMES:
        return True
    return any(part in QUERY_PARAM_WORDS for part in split_identifier(name).lower().split())


class Spans:
    """Character ranges of the request already used for some argument, so values are not reused."""

    def __init__(self) -> None:
        self._taken: list[tuple[int, int]] = []

    def free(self, start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in self._taken)

    def take(self, start: int, end: int) -> None:
        self._taken.append((start, end))
