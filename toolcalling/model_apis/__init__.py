"""Model APIs: the one interface the loop speaks to (``ModelAPI``), with Chat Completions, Responses and Anthropic.

``get_model_api()`` gives an assistant's (or the site's), built from ``TOOLCALLING`` once per API name (and
again when the setting changes); the name picks the implementation, as ``ENGINE`` picks a database backend.
Anthropic's is imported only when named, so its SDK (the ``[anthropic]`` extra) is needed only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ..conf import MODEL_APIS, toolcalling_settings
from ._base import (
    DeltaCallback,
    Features,
    ModelAPI,
    ModelReply,
    StreamCallbacks,
    Usage,
    reasoning_items,
)
from ._messages import (
    AssistantMessage,
    FilePart,
    HistoryMessage,
    ImagePart,
    ModelRequest,
    Part,
    RequestedCall,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)
from .openai import ChatCompletions, Responses, needs_responses

if TYPE_CHECKING:
    from ..toolkit import AssistantLike

# The implementation of each API name ``TOOLCALLING["API"]`` and ``Assistant.api`` may give, by dotted path
# (imported when first used: Anthropic's needs its optional SDK): the settings' registry, where a new API is one
# line. Each class builds its own clients, names its prices' provider and says in ``features`` what it does
# differently.
IMPLEMENTATIONS = MODEL_APIS

__all__ = [
    "AssistantMessage",
    "ChatCompletions",
    "DeltaCallback",
    "Features",
    "FilePart",
    "HistoryMessage",
    "ImagePart",
    "ModelAPI",
    "ModelReply",
    "ModelRequest",
    "Part",
    "RequestedCall",
    "Responses",
    "StreamCallbacks",
    "SystemMessage",
    "TextPart",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "get_model_api",
    "load_model_api",
    "needs_responses",
    "reasoning_items",
]


def get_model_api(assistant: AssistantLike | None = None) -> ModelAPI:
    """The model API ``assistant`` speaks (``Assistant.api``; without one, ``TOOLCALLING["API"]``), built from
    ``TOOLCALLING`` once per API (and again when the setting changes), with what builds its async client."""
    name = assistant.get_api() if assistant is not None else toolcalling_settings.API
    return toolcalling_settings.derived(f"model_api:{name}", load_model_api(name).from_settings)


def load_model_api(name: str) -> type[ModelAPI]:
    """The ``ModelAPI`` class of an API name; ``ImproperlyConfigured`` when the name is unknown or the API's SDK
    is not installed (its module names the extra that installs it)."""
    path = IMPLEMENTATIONS.get(name)
    if path is None:
        raise ImproperlyConfigured(
            f"Unknown model API {name!r}; set TOOLCALLING['API'] (or the assistant's api) "
            f"to one of {', '.join(map(repr, IMPLEMENTATIONS))}."
        )
    implementation: type[ModelAPI] = import_string(path)
    return implementation
