"""Tool argument extras: fields added to every tool's schema, filled by the model, removed before the call."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from ..exceptions import ImproperlyDefined, InvalidArguments
from ._schema import describe_validation_error, json_schema
from ._tool import Tool, arguments_object


def check_extras(extras: type[BaseModel] | None, tools: Iterable[Tool], owner: str) -> None:
    """Fail at definition time when an extra field has the name of a tool parameter."""
    if extras is None:
        return
    if not (isinstance(extras, type) and issubclass(extras, BaseModel)):
        raise ImproperlyDefined(f"{owner}.argument_extras must be a pydantic model class, not {extras!r}.")
    names = set(extras.model_fields)
    clashes = [
        f"{tool.name}.{param}" for tool in tools for param in tool.arguments_model.model_fields if param in names
    ]
    if clashes:
        raise ImproperlyDefined(
            f"{owner}.argument_extras ({extras.__name__}) has fields named like tool parameters: "
            f"{', '.join(sorted(clashes))}. Rename the extra fields."
        )


def with_extras(definition: dict[str, Any], extras: type[BaseModel]) -> dict[str, Any]:
    """A copy of a tool definition whose parameters also ask for the extra fields."""
    extra_schema = json_schema(extras)
    out = copy.deepcopy(definition)
    params = out["function"]["parameters"]
    params.setdefault("properties", {}).update(extra_schema.get("properties", {}))
    required = [*params.get("required", []), *extra_schema.get("required", [])]
    if required:
        params["required"] = required
    if extra_schema.get("$defs"):
        params.setdefault("$defs", {}).update(extra_schema["$defs"])
    return out


def split_extras(raw: str | None, extras: type[BaseModel]) -> tuple[dict[str, Any], BaseModel]:
    """Separate the extras from the tool's own arguments; bad extras raise ``InvalidArguments`` for the model."""
    data = arguments_object(raw)
    names = set(extras.model_fields)
    extra_data = {k: v for k, v in data.items() if k in names}
    arguments = {k: v for k, v in data.items() if k not in names}
    try:
        value = extras.model_validate(extra_data)
    except ValidationError as exc:
        raise InvalidArguments(describe_validation_error(exc))
    return arguments, value
