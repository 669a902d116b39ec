"""JSON schema checks for what has no Python signature: a client tool's arguments and result."""

from __future__ import annotations

from typing import Any

from jsonschema import exceptions, validators


def schema_error(schema: Any) -> str | None:
    """Why ``schema`` is not a JSON schema a validator can use (its first problem), or ``None`` when it is."""
    if not isinstance(schema, dict):
        return "must be a JSON schema (a dict)"
    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        return f"is not a valid JSON schema: {exc.message}"
    return None


def schema_problems(schema: dict[str, Any], data: Any, *, what: str = "(arguments)") -> list[str]:
    """What is wrong with ``data`` under ``schema`` (checked with ``schema_error`` first), one short line per
    problem, named by where it is (``what`` for the value itself). JSON schema validation coerces nothing."""
    validator = validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'.'.join(str(p) for p in e.absolute_path) or what}: {e.message}" for e in errors]
