"""Model APIs: the one interface the loop speaks to (``ModelAPI``), with Chat Completions, Responses and Anthropic.

``get_model_api()`` gives an assistant's (or the site's), built from ``TOOLCALLING`` once per API name (and
again when the setting changes); the name picks the implementation, as ``ENGINE`` picks a database backend.
Anthropic's is imported only when named, so its SDK (the ``[anthropic]`` extra) is needed only then.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import openai
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ..conf import OFFLINE_ANTHROPIC_CLIENT_FACTORY, OFFLINE_CLIENT_FACTORY, toolcalling_settings
from ._base import (
    IS_ERROR_KEY,
    PROVIDER_ITEMS_KEY,
    DeltaCallback,
    Features,
    ModelAPI,
    ModelReply,
    ModelRequest,
    RequestedCall,
    Usage,
    reasoning_items,
)
from ._chat_completions import ChatCompletions
from ._responses import Responses, needs_responses

if TYPE_CHECKING:
    import anthropic

    from ..toolkit import AssistantLike

# The implementation of each API name ``TOOLCALLING["API"]`` and ``Assistant.api`` may give, by dotted path
# (imported when first used: Anthropic's needs its optional SDK), and the function that builds its client.
IMPLEMENTATIONS: dict[str, str] = {
    "chat_completions": "toolcalling.model_apis._chat_completions.ChatCompletions",
    "responses": "toolcalling.model_apis._responses.Responses",
    "anthropic": "toolcalling.model_apis._anthropic.Anthropic",
}

# What a site installs for an API whose SDK is not part of the app's own requirements.
EXTRAS = {"anthropic": ("anthropic", "django-toolcalling[anthropic]")}

__all__ = [
    "IS_ERROR_KEY",
    "PROVIDER_ITEMS_KEY",
    "ChatCompletions",
    "DeltaCallback",
    "Features",
    "ModelAPI",
    "ModelReply",
    "ModelRequest",
    "RequestedCall",
    "Responses",
    "Usage",
    "build_anthropic_client",
    "build_openai_client",
    "get_model_api",
    "load_model_api",
    "needs_responses",
    "reasoning_items",
]


def get_model_api(assistant: AssistantLike | None = None) -> ModelAPI:
    """The model API ``assistant`` speaks (``Assistant.api``; without one, ``TOOLCALLING["API"]``), built from
    ``TOOLCALLING`` once per API (and again when the setting changes), with what builds its async client."""
    name = assistant.get_api() if assistant is not None else toolcalling_settings.API
    implementation = load_model_api(name)
    build: Callable[[], Any] = build_anthropic_client if name == "anthropic" else build_openai_client
    build_async: Callable[[], Callable[[], Any] | None] = (
        async_anthropic_builder if name == "anthropic" else async_openai_builder
    )
    return toolcalling_settings.derived(f"model_api:{name}", lambda: implementation(build(), build_async()))


def load_model_api(name: str) -> type[ModelAPI]:
    """The ``ModelAPI`` class of an API name; ``ImproperlyConfigured`` when the name is unknown or the API's SDK
    is not installed (naming the extra that installs it)."""
    path = IMPLEMENTATIONS.get(name)
    if path is None:
        raise ImproperlyConfigured(
            f"Unknown model API {name!r}; set TOOLCALLING['API'] (or the assistant's api) "
            f"to one of {', '.join(map(repr, IMPLEMENTATIONS))}."
        )
    try:
        implementation: type[ModelAPI] = import_string(path)
    except ImportError as exc:
        module, extra = EXTRAS.get(name, (None, None))
        if module is None or exc.name != module:
            raise
        raise ImproperlyConfigured(
            f"The model API {name!r} needs the {module!r} package, which is not installed: pip install {extra}"
        ) from exc
    return implementation


def build_openai_client() -> openai.OpenAI:
    """The ``openai.OpenAI`` client settings describe: ``CLIENT_FACTORY`` (or the offline model's) builds it,
    else ``API_KEY``, ``BASE_URL``, ``TIMEOUT`` and ``MAX_RETRIES`` do."""
    s = toolcalling_settings
    factory = s.CLIENT_FACTORY or (OFFLINE_CLIENT_FACTORY if s.OFFLINE_MODEL else None)
    if factory:
        return import_string(factory)()
    return openai.OpenAI(**_openai_arguments())


def async_openai_builder() -> Callable[[], openai.AsyncOpenAI] | None:
    """What builds the ``openai.AsyncOpenAI`` client of the same settings (one per event loop); ``None`` when a
    factory builds the client (its async twin is unknown: async turns then wait for the model in a thread)."""
    if toolcalling_settings.CLIENT_FACTORY or toolcalling_settings.OFFLINE_MODEL:
        return None
    arguments = _openai_arguments()
    return lambda: openai.AsyncOpenAI(**arguments)


def _openai_arguments() -> dict[str, Any]:
    s = toolcalling_settings
    return {"api_key": s.API_KEY or "not-set", "base_url": s.BASE_URL, "timeout": s.TIMEOUT,
            "max_retries": s.MAX_RETRIES}  # fmt: skip


def build_anthropic_client() -> anthropic.Anthropic:
    """The ``anthropic.Anthropic`` client settings describe: ``API_KEY`` (else env ``ANTHROPIC_API_KEY``),
    ``BASE_URL`` (else env ``ANTHROPIC_BASE_URL``, else Anthropic's; a trailing ``/v1`` is dropped, as the SDK
    adds it), ``TIMEOUT`` and ``MAX_RETRIES``. ``CLIENT_FACTORY`` builds the openai client only. The offline
    model answers this API too."""
    import anthropic

    arguments = _anthropic_arguments()
    if arguments is None:
        return import_string(OFFLINE_ANTHROPIC_CLIENT_FACTORY)()
    return anthropic.Anthropic(**arguments)


def async_anthropic_builder() -> Callable[[], anthropic.AsyncAnthropic] | None:
    """What builds the ``anthropic.AsyncAnthropic`` client of the same settings (one per event loop); ``None``
    for the offline model's client (its async twin is unknown: async turns then wait for it in a thread)."""
    import anthropic

    arguments = _anthropic_arguments()
    if arguments is None:
        return None
    return lambda: anthropic.AsyncAnthropic(**arguments)


def _anthropic_arguments() -> dict[str, Any] | None:
    """The Anthropic client's arguments from settings; ``None`` when the offline model's factory builds it."""
    s = toolcalling_settings
    if s.OFFLINE_MODEL and not s.CLIENT_FACTORY:
        return None
    api_key = s.user_settings.get("API_KEY") or os.environ.get("ANTHROPIC_API_KEY") or "not-set"
    base_url = s.user_settings.get("BASE_URL") or os.environ.get("ANTHROPIC_BASE_URL") or None
    if base_url:
        base_url = base_url.rstrip("/").removesuffix("/v1")
    return {"api_key": api_key, "base_url": base_url, "timeout": s.TIMEOUT, "max_retries": s.MAX_RETRIES}
