"""Structured output: ask the model for JSON of a pydantic model, validate it, and ask again when it is wrong."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..exceptions import ImproperlyDefined
from ..model_apis import AssistantMessage, HistoryMessage, UserMessage
from ..toolkit import describe_validation_error

if TYPE_CHECKING:
    from ..model_apis import ModelReply

JSON_SCHEMA = "json_schema"
JSON_OBJECT = "json_object"
MODES = (JSON_SCHEMA, JSON_OBJECT)


@dataclass(kw_only=True)
class OutputSpec:
    """What the answer must look like and how to ask for it."""

    output_type: type[BaseModel]
    mode: str = JSON_SCHEMA
    retries: int = 3
    strict: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.output_type, type) and issubclass(self.output_type, BaseModel)):
            raise ImproperlyDefined(f"output_type must be a pydantic model class, not {self.output_type!r}.")
        if self.mode not in MODES:
            raise ImproperlyDefined(f"output mode must be one of {MODES}, not {self.mode!r}.")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ImproperlyDefined(f"output_retries must be a non-negative integer, not {self.retries!r}.")

    @property
    def name(self) -> str:
        return re.sub(r"[^a-zA-Z0-9_-]", "_", self.output_type.__name__)[:64] or "output"

    def schema(self) -> dict[str, Any]:
        return self.output_type.model_json_schema()

    def response_format(self) -> dict[str, Any]:
        """The ``response_format`` request option for this mode."""
        if self.mode == JSON_OBJECT:
            return {"type": JSON_OBJECT}
        return {"type": JSON_SCHEMA, "json_schema": {"name": self.name, "schema": self.schema(), "strict": self.strict}}

    def instructions(self) -> str:
        """Added to the system message. ``json_object`` endpoints only see the schema here (and need the word JSON)."""
        text = "When you give your final answer, answer with one JSON object only, no other text."
        if self.mode == JSON_OBJECT:
            text += f" It must follow this JSON schema:\n{json.dumps(self.schema())}"
        return text

    def parse(self, content: str | None) -> tuple[BaseModel | None, str]:
        """Return ``(value, "")`` or ``(None, what was wrong)``, written for the model to fix."""
        text = (content or "").strip()
        # Some models wrap JSON in a Markdown fence even when asked not to; the JSON inside is what counts.
        fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
        if fenced:
            text = fenced.group(1)
        try:
            return self.output_type.model_validate_json(text), ""
        except ValidationError as exc:
            if any(e["type"] == "json_invalid" for e in exc.errors()):
                return None, "the answer is not valid JSON"
            return None, describe_validation_error(exc)

    def correction(self, problem: str) -> str:
        """The message that sends an invalid answer back to the model."""
        return (
            f"Your answer does not match the required JSON schema {self.name!r}: {problem}. "
            "Answer again with one corrected JSON object only."
        )


@dataclass(kw_only=True)
class Verdict:
    """What a final answer is worth: its ``value``, or a ``problem`` to send back (``retry``) or to fail on."""

    value: BaseModel | None = None
    problem: str = ""
    retry: bool = False


class OutputCheck:
    """Checks a turn's final answers against an ``OutputSpec``, counting the retries it has allowed."""

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.retries_used = 0
        self.value: BaseModel | None = None

    def check(self, reply: ModelReply) -> Verdict:
        """Accept a valid answer; send an invalid one back while retries are left; else say why it failed.

        The turn keeps a rejected answer and its correction out of the stored history (their tokens still
        count); after the last retry the invalid answer is stored and the turn fails.
        """
        value, problem = self.spec.parse(reply.content)
        if value is not None:
            self.value = value
            return Verdict(value=value)
        if self.retries_used >= self.spec.retries:
            attempts = self.retries_used + 1
            return Verdict(problem=f"The answer did not match {self.spec.name} after {attempts} attempts: {problem}.")
        self.retries_used += 1
        return Verdict(problem=problem, retry=True)

    def correction(self, reply: ModelReply, problem: str) -> list[HistoryMessage]:
        """The rejected answer and the request to fix it, as messages for the next request only."""
        return [
            AssistantMessage(reply.content or "", provider_items=reply.provider_items),
            UserMessage(self.spec.correction(problem)),
        ]
