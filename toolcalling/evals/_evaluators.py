"""The checks a case can ask for, as pydantic-evals evaluators over a ``Transcript``: the tool calls, the final
answer (contains, regex, JSON schema) and the limits of the turn."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from ._cases import EvalInputs, ObservedCall, Transcript

Context = EvaluatorContext[EvalInputs, Transcript, Any]


def is_subset(expected: Any, actual: Any) -> bool:
    """Whether ``expected`` is found in ``actual``: mappings by their keys (recursively), the rest by equality."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and is_subset(value, actual[key]) for key, value in expected.items()
        )
    return bool(expected == actual)


def _matches(expected: Mapping[str, Any], call: ObservedCall) -> bool:
    status = expected.get("status")
    return (
        call.name == expected.get("name")
        and is_subset(expected.get("arguments") or {}, call.arguments)
        and (status is None or status == call.status)
    )


def _describe(call: Mapping[str, Any] | ObservedCall) -> str:
    if isinstance(call, ObservedCall):
        return f"{call.name}({json.dumps(call.arguments, sort_keys=True)}) {call.status}"
    status = f" {call['status']}" if call.get("status") else ""
    return f"{call.get('name')}({json.dumps(call.get('arguments') or {}, sort_keys=True)}){status}"


@dataclass
class ToolCalls(Evaluator[EvalInputs, Transcript, Any]):
    """The model called these tools: each item a ``{"name": ..., "arguments": {...}}`` whose arguments are a
    subset of the call's, with an optional ``"status"`` the call ended in (``succeeded``, ``failed``, ...).
    ``order``: ``in_order`` (a subsequence of the calls made) or ``any_order``; ``only``: no other calls."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    order: Literal["in_order", "any_order"] = "in_order"
    only: bool = False

    def evaluate(self, ctx: Context) -> EvaluationReason:
        made = ctx.output.tool_calls
        missing = self._missing(made)
        made_text = ", ".join(map(_describe, made)) or "none"
        if missing:
            return EvaluationReason(False, f"not called {self.order.replace('_', ' ')}: {missing}; calls: {made_text}")
        if self.only and len(made) != len(self.calls):
            return EvaluationReason(False, f"{len(made)} calls made, {len(self.calls)} expected: {made_text}")
        return EvaluationReason(True, f"calls: {made_text}")

    def _missing(self, made: Sequence[ObservedCall]) -> str:
        if self.order == "in_order":
            position = 0
            for expected in self.calls:
                while position < len(made) and not _matches(expected, made[position]):
                    position += 1
                if position == len(made):
                    return _describe(expected)
                position += 1
            return ""
        free = list(made)
        for expected in self.calls:
            found = next((call for call in free if _matches(expected, call)), None)
            if found is None:
                return _describe(expected)
            free.remove(found)
        return ""


@dataclass
class AnswerContains(Evaluator[EvalInputs, Transcript, Any]):
    """The final answer contains ``value`` (ignoring case unless ``case_sensitive``)."""

    value: str
    case_sensitive: bool = False

    def evaluate(self, ctx: Context) -> EvaluationReason:
        reply, value = ctx.output.reply, self.value
        found = value in reply if self.case_sensitive else value.casefold() in reply.casefold()
        return EvaluationReason(found, None if found else f"{value!r} not in the answer {reply!r}")


@dataclass
class AnswerMatches(Evaluator[EvalInputs, Transcript, Any]):
    """The final answer matches the regular expression ``pattern`` (``re.search``)."""

    pattern: str

    def evaluate(self, ctx: Context) -> EvaluationReason:
        found = re.search(self.pattern, ctx.output.reply) is not None
        return EvaluationReason(found, None if found else f"/{self.pattern}/ does not match {ctx.output.reply!r}")


@dataclass
class AnswerSchema(Evaluator[EvalInputs, Transcript, Any]):
    """The structured output (or, without one, the answer read as JSON) is valid against a JSON schema."""

    json_schema: dict[str, Any]

    def evaluate(self, ctx: Context) -> EvaluationReason:
        from jsonschema import exceptions, validators

        value: Any = ctx.output.output
        if value is None:
            try:
                value = json.loads(ctx.output.reply)
            except ValueError:
                return EvaluationReason(False, "the answer is not JSON")
        validator = validators.validator_for(self.json_schema)(self.json_schema)
        error = exceptions.best_match(validator.iter_errors(value))
        return EvaluationReason(error is None, None if error is None else error.message)


@dataclass
class Limits(Evaluator[EvalInputs, Transcript, Any]):
    """The case stayed within these: model answers (``turns``), tool calls, total tokens, cost."""

    turns: int | None = None
    tool_calls: int | None = None
    tokens: int | None = None
    cost: str | None = None

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        over = []
        if self.turns is not None and out.turns > self.turns:
            over.append(f"{out.turns} model answers > {self.turns}")
        if self.tool_calls is not None and len(out.tool_calls) > self.tool_calls:
            over.append(f"{len(out.tool_calls)} tool calls > {self.tool_calls}")
        if self.tokens is not None and out.total_tokens > self.tokens:
            over.append(f"{out.total_tokens} tokens > {self.tokens}")
        if self.cost is not None and out.cost is not None and Decimal(out.cost) > Decimal(self.cost):
            over.append(f"cost {out.cost} > {self.cost}")
        return EvaluationReason(not over, "; ".join(over) or None)


@dataclass
class Succeeded(Evaluator[EvalInputs, Transcript, Any]):
    """No turn of the case failed (a model error, a limit with ``"raise"``, invalid structured output)."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        return EvaluationReason(not ctx.output.error, ctx.output.error or None)


EVALUATORS: tuple[type[Evaluator[EvalInputs, Transcript, Any]], ...] = (
    ToolCalls,
    AnswerContains,
    AnswerMatches,
    AnswerSchema,
    Limits,
    Succeeded,
)
