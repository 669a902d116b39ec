"""Loading a dataset: a YAML or JSON file in pydantic-evals' format, or a ``Dataset`` built in Python and named
by its dotted path (``myapp.evals:dataset``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.utils.module_loading import import_string
from pydantic_evals import Dataset
from pydantic_evals.evaluators import Evaluator

from ..exceptions import ImproperlyDefined
from ._cases import EvalInputs, Transcript
from ._evaluators import EVALUATORS
from ._judge import AnswerJudge

EvalDataset = Dataset[EvalInputs, Transcript, Any]

FILE_SUFFIXES = (".yaml", ".yml", ".json")


def evaluator_types() -> tuple[type[Evaluator[EvalInputs, Transcript, Any]], ...]:
    """The evaluators a dataset file may name, besides pydantic-evals' own."""
    return (*EVALUATORS, AnswerJudge)


def load_dataset(path: str) -> EvalDataset:
    """The dataset at ``path``: a ``.yaml``/``.yml``/``.json`` file, else the dotted path of a ``Dataset``."""
    if path.endswith(FILE_SUFFIXES):
        if not Path(path).is_file():
            raise ImproperlyDefined(f"No dataset file {path!r}.")
        try:
            return EvalDataset.from_file(path, custom_evaluator_types=evaluator_types())
        except ValueError as exc:
            raise ImproperlyDefined(f"The dataset {path!r} cannot be read: {exc}")
    try:
        found = import_string(path.replace(":", "."))
    except ImportError as exc:
        raise ImproperlyDefined(f"{path!r} is neither a dataset file nor the dotted path of a Dataset: {exc}")
    if not isinstance(found, Dataset):
        raise ImproperlyDefined(f"{path!r} is a {type(found).__name__}, not a pydantic_evals Dataset.")
    return found
