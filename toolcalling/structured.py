"""Structured output: ask the model for JSON of a pydantic model, validate it, and ask again when it is wrong."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from . import storage
from .exceptions import ImproperlyDefined, TurnError
from .schema import describe_validation_error

if TYPE_CHECKING:
    from .client import ModelReply
    from .loop import Turn

JSON_SCHEMA = "json_schema"
JSON_OBJECT = "json_object"
MODES = (JSON_SCHEMA, JSON_OBJECT)


class OutputValidationError(TurnError):
    """The model's final answer did not fit the output type, even after the allowed retries."""

    code = "output_validation_failed"


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


def check_answer(turn: Turn, spec: OutputSpec, reply: ModelReply) -> BaseModel | None:
    """Validate a final answer; when it is wrong, send it back to the model or, after the last retry, fail.

    An invalid answer and the correction request are kept out of the stored history (only the turn's
    in-memory history holds them), so the stored history shows the question and the valid answer; their
    tokens still count. After the last allowed retry the invalid answer is stored (the history stays
    valid and shows what the model said) and the turn fails with ``OutputValidationError``.
    """
    value, problem = spec.parse(reply.content)
    if value is not None:
        turn.output_value = value
        return value
    if turn.output_retries_used >= spec.retries:
        message, _ = storage.add_reply(turn.conversation, reply)
        turn._added(message)
        raise OutputValidationError(
            f"The answer did not match {spec.name} after {turn.output_retries_used + 1} attempts: {problem}."
        )
    turn.output_retries_used += 1
    usage = reply.usage
    storage.add_usage(turn.conversation, usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    turn.history += [
        {"role": "assistant", "content": reply.content or ""},
        {"role": "user", "content": spec.correction(problem)},
    ]
    turn.emit("output_retry", {"attempt": turn.output_retries_used, "problem": problem})
    return None
