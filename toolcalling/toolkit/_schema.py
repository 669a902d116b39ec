"""Turn a function's signature into a pydantic arguments model and the JSON schema the model reads."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..exceptions import ImproperlyDefined
from ._context import ToolContext

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION_HEADER = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def split_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return the description part of a Google-style docstring and its ``Args:`` descriptions.

    The description ends at the first section header (``Args:``, ``Returns:``, ``Raises:`` ...):
    those sections are for developers, except the argument descriptions, which the model reads.
    """
    if not doc:
        return "", {}
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in inspect.cleandoc(doc).splitlines():
        indent = len(line) - len(line.lstrip())
        if indent == 0 and _SECTION_HEADER.match(line):
            section = "args" if _ARGS_HEADER.match(line) else "other"
            current, arg_indent = None, None
            continue
        if section is None:
            summary.append(line)
        elif section == "args" and line.strip():
            match = _ARG_LINE.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(1).lstrip("*")
                params[current] = match.group(3).strip()
            elif current:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext or (isinstance(annotation, str) and annotation == "ToolContext")


def _allows_none(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _allows_none(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return type(None) in typing.get_args(annotation)
    return annotation is None or annotation is type(None)


class ArgumentsModel(BaseModel):
    """Base of every generated arguments model: unknown arguments are errors, never silently dropped."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)


def build_arguments_model(
    func: Callable[..., Any], name: str, param_docs: dict[str, str]
) -> tuple[type[ArgumentsModel], str | None]:
    """Build the pydantic model of ``func``'s parameters; return it with the context parameter's name.

    Every problem with the signature is collected and raised once, naming the function.
    """
    problems: list[str] = []
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:  # a forward reference that cannot be resolved
        raise ImproperlyDefined(f"Tool {func.__qualname__!r}: cannot resolve type hints: {exc}") from exc
    signature = inspect.signature(func)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in signature.parameters.values():
        annotation = hints.get(param.name, inspect.Parameter.empty)
        if _is_context(annotation):
            if context_param is not None:
                problems.append(f"more than one ToolContext parameter ({context_param!r}, {param.name!r})")
            context_param = param.name
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            problems.append(f"*{param.name}/**{param.name} parameters cannot be described to a model")
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            problems.append(f"parameter {param.name!r} is positional-only; tools are called with keywords")
            continue
        if annotation is inspect.Parameter.empty:
            problems.append(f"parameter {param.name!r} has no type annotation")
            continue
        if param.name.startswith("_"):
            problems.append(f"parameter {param.name!r} starts with an underscore, which pydantic cannot use")
            continue
        if param.default is not inspect.Parameter.empty:
            default: Any = param.default
        elif _allows_none(annotation):
            default = None
        else:
            default = ...
        description = param_docs.get(param.name)
        field_info = Field(default, description=description) if description else Field(default)
        fields[param.name] = (annotation, field_info)
    if problems:
        raise ImproperlyDefined(f"Tool {func.__qualname__!r} cannot be used: " + "; ".join(problems) + ".")
    model_name = "".join(part.capitalize() for part in re.split(r"[_-]", name)) + "Arguments"
    try:
        model = create_model(model_name, __base__=ArgumentsModel, **fields)
    except Exception as exc:
        raise ImproperlyDefined(f"Tool {func.__qualname__!r} cannot be used: {exc}") from exc
    return model, context_param


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an arguments model, without pydantic's titles the model has no use for."""
    try:
        schema = model.model_json_schema()
    except Exception as exc:
        raise ImproperlyDefined(f"{model.__name__}: no JSON schema for these parameters: {exc}") from exc
    schema = _strip_titles(schema)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema.pop("additionalProperties", None)
    return schema


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: (
                {k: _strip_titles(v) for k, v in value.items()}
                if key in ("properties", "$defs")
                else _strip_titles(value)
            )
            for key, value in node.items()
            if key != "title"
        }
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    return node


def unexpected_keys(
    value: Any, schema: dict[str, Any], defs: dict[str, Any] | None = None, path: str = ""
) -> list[str]:
    """The keys of ``value`` that its JSON schema does not know, at any depth: nested models forbid unknown
    keys as the arguments themselves do (pydantic would drop them silently). A schema that allows more
    (``additionalProperties``) or says nothing of an object's properties (a plain ``dict``) allows them."""
    defs = schema.get("$defs", {}) if defs is None else defs
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return unexpected_keys(value, defs.get(ref.removeprefix("#/$defs/"), {}), defs, path)
    branches = [b for key in ("anyOf", "oneOf") for b in schema.get(key, []) if isinstance(b, dict)]
    if branches:
        # The value is fine if some branch takes it whole; otherwise report what the closest branch refuses.
        found = [unexpected_keys(value, branch, defs, path) for branch in branches if _may_hold(value, branch, defs)]
        return min(found, key=len) if found and all(found) else []
    problems: list[str] = []
    for part in schema.get("allOf", []):
        problems += unexpected_keys(value, part, defs, path)
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(properties, dict) and key in properties:
                problems += unexpected_keys(item, properties[key], defs, where)
            elif isinstance(extra, dict):
                problems += unexpected_keys(item, extra, defs, where)
            elif isinstance(properties, dict) and extra is not True and path:
                problems.append(where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problems += unexpected_keys(item, schema["items"], defs, f"{path}.{index}" if path else str(index))
    return problems


def _may_hold(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    """Whether a branch of a union is about values of this kind (an object for a dict, and so on)."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = defs.get(ref.removeprefix("#/$defs/"), {})
    kind = schema.get("type")
    if isinstance(value, dict):
        return kind == "object" or "properties" in schema
    if isinstance(value, list):
        return kind == "array"
    return True


def describe_validation_error(exc: ValidationError) -> str:
    """A short, model-readable list of what was wrong with the arguments."""
    parts = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(p) for p in error["loc"]) or "(arguments)"
        if error["type"] == "extra_forbidden":
            parts.append(f"{location}: unexpected argument")
        else:
            parts.append(f"{location}: {error['msg']}")
    return "; ".join(parts)


__all__ = [
    "ArgumentsModel",
    "unexpected_keys",
    "build_arguments_model",
    "describe_validation_error",
    "json_schema",
    "split_docstring",
]
