"""The messages of a request: the history as the loop and storage speak it, typed, and the same for every API.

A request's ``messages`` are a list of four kinds: the instructions (``SystemMessage``), what the user wrote
with the files they attached (``UserMessage`` and its parts), an earlier answer (``AssistantMessage``: its text,
its calls and the items the API issued it as, which only that API reads) and a call's result
(``ToolMessage``, failed or not). Each model API converts them to its own wire form and nothing else does:
there are no side keys, and a failed call says so in ``is_error``, never in its text's first words.

The classes are plain mutable dataclasses: a ``before_model_call`` hook may change one (or replace it) in the
request it is given. Each says its ``role``, the Chat Completions name of its kind, which the loop reads
rather than asking ``isinstance`` of every message of a long history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal


@dataclass(kw_only=True)
class RequestedCall:
    """One tool call in a model answer, as the model sent it (and as the history holds it)."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class TextPart:
    """Text among a user message's parts: a file that a request does not carry stands as one (it names it)."""

    text: str


@dataclass(slots=True)
class ImagePart:
    """An image, by its URL: a ``data:`` URL holds the bytes (a site's storage is private)."""

    url: str
    detail: str = "auto"


@dataclass(slots=True)
class FilePart:
    """A document (a PDF), as a base64 ``data:`` URL and the name it was uploaded with."""

    data_url: str
    filename: str


Part = TextPart | ImagePart | FilePart


@dataclass(slots=True)
class SystemMessage:
    """Instructions: the assistant's, first in every request, or a later one a hook adds."""

    role: ClassVar[Literal["system"]] = "system"

    text: str


@dataclass(slots=True)
class UserMessage:
    """What the user wrote, and after it the files they attached (``parts``)."""

    role: ClassVar[Literal["user"]] = "user"

    text: str
    parts: list[Part] = field(default_factory=list)


@dataclass(slots=True)
class AssistantMessage:
    """An earlier answer of the model: its text, its calls (with the arguments the history holds: an approver
    may have edited them), and ``provider_items``, the answer as its API issued it (``ModelReply``), which only
    that API sends back."""

    role: ClassVar[Literal["assistant"]] = "assistant"

    text: str
    calls: list[RequestedCall] = field(default_factory=list)
    provider_items: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class ToolMessage:
    """The result of the call ``call_id`` as the model reads it; ``is_error`` when the call failed."""

    role: ClassVar[Literal["tool"]] = "tool"

    call_id: str
    text: str
    is_error: bool = False


HistoryMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage


@dataclass(kw_only=True)
class ModelRequest:
    """What is about to be sent to the model; hooks may change ``messages``, ``tools`` and ``options``."""

    model: str
    messages: list[HistoryMessage]
    tools: list[dict[str, Any]]
    options: dict[str, Any] = field(default_factory=dict)
