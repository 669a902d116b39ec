"""How the OpenAI API words its request errors, and the JSON type checks behind them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def type_name(value: object) -> str:
    """Describe a JSON value the way the API does in type errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def quote_list(values: Iterable[str]) -> str:
    items = [f"'{v}'" for v in values]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + ", and " + items[-1]


def missing(path: str) -> str:
    return f"Missing required parameter: '{path}'."


def bad_type(path: str, expected: str, value: object) -> str:
    return f"Invalid type for '{path}': expected {expected}, but got {type_name(value)} instead."


def bad_value(path: str, value: object, supported: Iterable[str]) -> str:
    return f"Invalid value for '{path}': '{value}'. Supported values are: {quote_list(supported)}."


def empty_array(path: str) -> str:
    return f"Invalid '{path}': empty array. Expected an array with minimum length 1, but got an empty array instead."


def unknown(path: str) -> str:
    return f"Unknown parameter: '{path}'."


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
