"""Evals: run a dataset of cases (pydantic-evals) through an assistant's real loop and tools, each case rolled back.

Needs the ``[evals]`` extra (pydantic-evals). Names are imported on first use, so ``toolcalling.evals.cases``
(which the admin's "add to dataset" uses) and the replay recorder work without it."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._cases import EvalInputs, Transcript
    from ._datasets import load_dataset
    from ._evaluators import AnswerContains, AnswerMatches, AnswerSchema, Limits, Succeeded, ToolCalls
    from ._judge import AnswerJudge
    from ._suite import evaluate

_WHERE = {
    "EvalInputs": "_cases",
    "Transcript": "_cases",
    "load_dataset": "_datasets",
    "AnswerContains": "_evaluators",
    "AnswerMatches": "_evaluators",
    "AnswerSchema": "_evaluators",
    "Limits": "_evaluators",
    "Succeeded": "_evaluators",
    "ToolCalls": "_evaluators",
    "AnswerJudge": "_judge",
    "evaluate": "_suite",
}

__all__ = [
    "AnswerContains",
    "AnswerJudge",
    "AnswerMatches",
    "AnswerSchema",
    "EvalInputs",
    "Limits",
    "Succeeded",
    "ToolCalls",
    "Transcript",
    "evaluate",
    "load_dataset",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
