"""What every model API implements, and the replies it gives: the one interface the loop speaks to.

As Django's database backends share ``BaseDatabaseWrapper`` and say what differs in ``features``, each model
API is a ``ModelAPI`` that sends one ``ModelRequest`` (built by the turn from the stored messages, typed:
``_messages``) and returns a validated ``ModelReply``; what differs between APIs is a
``Features`` object, so code above never asks which API it has.
"""

from __future__ import annotations

import abc
import asyncio
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from asgiref.sync import sync_to_async
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _

from ..exceptions import ModelError
from ._messages import ModelRequest, RequestedCall

DeltaCallback = Callable[[str], None]
# A tool call's arguments as the model writes them: the call's id, its tool's name, and the next piece of the
# arguments' JSON text. For showing only: the arguments a call runs with are read from the whole answer.
ToolInputCallback = Callable[[str, str, str], None]


@dataclass(frozen=True)
class StreamCallbacks:
    """A ``DeltaCallback`` (called with each text piece) that also hears the pieces of tool calls' arguments
    (``tool_input``), for a caller that shows them as they come. A reader finds it with ``tool_input_of``."""

    text: DeltaCallback
    tool_input: ToolInputCallback

    def __call__(self, piece: str) -> None:
        self.text(piece)


def tool_input_of(on_delta: DeltaCallback | None) -> ToolInputCallback | None:
    """Where a streamed answer's argument pieces go: nowhere unless the caller asked for them."""
    return on_delta.tool_input if isinstance(on_delta, StreamCallbacks) else None


@dataclass(kw_only=True)
class Usage:
    """Token counts of one answer: ``prompt_tokens`` are the input, ``completion_tokens`` the output, on every API.

    ``cached_tokens`` are the part of the input the provider read from its prompt cache, ``cache_write_tokens``
    the part it wrote to it (Anthropic bills those above the input rate), ``reasoning_tokens`` the part of the
    output spent on reasoning (all already counted in the input and output).

    ``known`` is ``False`` when the endpoint reported no usage, or one that is no usage (a count missing,
    ``null``, negative, a float or a string): the counts are then zero and mean nothing, and the answer's
    cost is unknown, never 0."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0
    known: bool = True


@dataclass(kw_only=True)
class ModelReply:
    """A model answer: text, tool calls, or both."""

    content: str | None
    tool_calls: list[RequestedCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    provider_items: list[dict[str, Any]] = field(default_factory=list)
    """The answer as the API issued it, in order, to be sent back as it was: the Responses API's output items
    (reasoning with its encrypted content, messages and function calls, each with the ``id`` it was issued
    with, which the API pairs them by), Anthropic's content blocks (thinking with its signature, text, tool use).
    Stored with the answer; empty on Chat Completions. Each API sends back only the item types it issues, so a
    conversation that changes API keeps working."""

    @property
    def reasoning(self) -> list[dict[str, Any]]:
        """The reasoning among ``provider_items``: Responses reasoning items, Anthropic thinking blocks."""
        return reasoning_items(self.provider_items)


@dataclass(frozen=True, kw_only=True)
class Features:
    """What a model API does differently, for the code above that must know (never ``if api == ...``)."""

    refuses_reasoning_model_tools: bool = False
    """Whether the API refuses function tools with OpenAI's reasoning models (``needs_responses``): Chat
    Completions does ("Please use /v1/responses"), so a system check warns of such an assistant."""


class ModelAPI(abc.ABC):
    """One model API: ``send`` asks the model once and returns a validated ``ModelReply``.

    Errors of any kind (the endpoint's status, a time-out, an answer that is not a valid reply) are raised
    as ``ModelError``, before anything of the answer is stored.
    """

    features: ClassVar[Features] = Features()
    """What this API does differently from the others; by default nothing."""
    price_provider: ClassVar[str | None] = None
    """The genai-prices provider id that prices this API's answers when ``BASE_URL`` is not set (the provider
    its SDK's default endpoint is); ``None``: none does."""
    client: Any
    """The SDK client requests go through (each API's class names its type)."""

    @classmethod
    def from_settings(cls) -> ModelAPI:
        """The API with the clients ``TOOLCALLING`` describes (``get_model_api`` keeps one per API name)."""
        return cls(cls.build_client(), cls.async_client_builder())

    @classmethod
    @abc.abstractmethod
    def build_client(cls) -> Any:
        """The SDK client ``TOOLCALLING`` describes (``CLIENT_FACTORY``, the offline model's, or one built from
        ``API_KEY``, ``BASE_URL``, ``TIMEOUT`` and ``MAX_RETRIES``)."""

    @classmethod
    def async_client_builder(cls) -> Callable[[], Any] | None:
        """What builds the SDK's async client of the same settings, one per event loop; ``None`` (this
        default): ``asend`` waits for ``send`` in a thread."""
        return None

    def __init__(self, client: Any, build_async_client: Callable[[], Any] | None = None) -> None:
        self.client = client
        self.build_async_client = build_async_client
        """What builds the SDK's async client for ``asend``, when settings describe one (``None``: a thread)."""
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    @property
    def async_client(self) -> Any:
        """The async client of the running event loop (one per loop: its connections belong to that loop), or
        ``None`` without a builder."""
        if self.build_async_client is None:
            return None
        loop = asyncio.get_running_loop()
        if loop not in self._async_clients:
            self._async_clients[loop] = self.build_async_client()
        return self._async_clients[loop]

    @abc.abstractmethod
    def send(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        """Ask the model once. With ``on_delta``, stream the answer and call it with each text delta."""

    async def asend(self, request: ModelRequest, *, on_delta: DeltaCallback | None = None) -> ModelReply:
        """``send`` for an async caller. This default waits in a thread of its own (not the event loop's);
        an API with an async client waits on the event loop instead, holding no thread."""
        return await sync_to_async(self.send, thread_sensitive=False)(request, on_delta=on_delta)


REASONING_TYPES = ("reasoning", "thinking", "redacted_thinking")


def reasoning_items(items: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The reasoning among stored provider items (Responses reasoning items, Anthropic thinking blocks)."""
    return [item for item in items or () if isinstance(item, dict) and item.get("type") in REASONING_TYPES]


def invalid(problem: str) -> ModelError:
    """The error for an answer that is not a valid reply of its API."""
    text = _("The model endpoint answered something that is not a valid completion: %(problem)s.")
    return ModelError(text % {"problem": problem})


def missing_sdk(api: str, package: str, extra: str) -> ImproperlyConfigured:
    """The error of an API whose SDK is not installed (raised as its module is imported, as a Django database
    backend does without its driver), naming the extra that installs it."""
    return ImproperlyConfigured(
        f"The model API {api!r} needs the {package!r} package, which is not installed: pip install {extra}"
    )
