"""Pieces of a request read the same way by every API that converts them to its own form (Responses,
Anthropic): a function tool's definition, given in Chat Completions' form (``ModelRequest.tools``)."""

from __future__ import annotations

from typing import Any


def no_parameters() -> dict[str, Any]:
    """The parameters of a function tool that declares none."""
    return {"type": "object", "properties": {}}


def function_of(tool: dict[str, Any]) -> dict[str, Any] | None:
    """The ``function`` of a Chat Completions function tool (name, description, parameters); ``None`` for any
    other tool, which goes out as it is."""
    if tool.get("type") != "function" or "function" not in tool:
        return None
    function: dict[str, Any] = tool["function"]
    return function
