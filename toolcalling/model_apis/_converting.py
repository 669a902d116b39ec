"""Pieces of the turn's Chat Completions-shaped requests, read the same way by every API that converts them to
its own form (Responses, Anthropic): a message's text, a function tool's definition, an image part's URL."""

from __future__ import annotations

from typing import Any


def content_text(content: Any) -> str:
    """The text of a message's content (a list of text parts is joined; anything else is no text)."""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


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


def image_url(part: dict[str, Any]) -> tuple[Any, Any]:
    """The URL of an ``image_url`` part and its ``detail`` (``"auto"`` when not given); the URL may be given
    bare, as some clients send it."""
    image = part.get("image_url") or {}
    if isinstance(image, dict):
        return image.get("url"), image.get("detail", "auto")
    return image, "auto"
