"""Model APIs: the one interface the loop speaks to (``ModelAPI``), with Chat Completions and Responses.

``get_model_api()`` gives an assistant's (or the site's), built from ``TOOLCALLING`` once per API name (and
again when the setting changes); the name picks the implementation, as ``ENGINE`` picks a database backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import openai
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ..conf import OFFLINE_CLIENT_FACTORY, toolcalling_settings
from ._base import REASONING_KEY, DeltaCallback, Features, ModelAPI, ModelReply, RequestedCall, Usage
from ._chat_completions import ChatCompletions
from ._responses import Responses, needs_responses

if TYPE_CHECKING:
    from ..toolkit import AssistantLike

# The implementation of each API name ``TOOLCALLING["API"]`` and ``Assistant.api`` may give.
IMPLEMENTATIONS: dict[str, type[ModelAPI]] = {"chat_completions": ChatCompletions, "responses": Responses}

__all__ = [
    "REASONING_KEY",
    "ChatCompletions",
    "DeltaCallback",
    "Features",
    "ModelAPI",
    "ModelReply",
    "RequestedCall",
    "Responses",
    "Usage",
    "build_openai_client",
    "get_model_api",
    "needs_responses",
]


def get_model_api(assistant: AssistantLike | None = None) -> ModelAPI:
    """The model API ``assistant`` speaks (``Assistant.api``; without one, ``TOOLCALLING["API"]``), built from
    ``TOOLCALLING`` once per API (and again when the setting changes)."""
    name = assistant.get_api() if assistant is not None else toolcalling_settings.API
    implementation = IMPLEMENTATIONS.get(name)
    if implementation is None:
        raise ImproperlyConfigured(
            f"The model API {name!r} is not available yet; set TOOLCALLING['API'] (or the assistant's api) "
            f"to one of {', '.join(map(repr, IMPLEMENTATIONS))}."
        )
    return toolcalling_settings.derived(f"model_api:{name}", lambda: implementation(build_openai_client()))


def build_openai_client() -> openai.OpenAI:
    """The ``openai.OpenAI`` client settings describe: ``CLIENT_FACTORY`` (or the offline model's) builds it,
    else ``API_KEY``, ``BASE_URL``, ``TIMEOUT`` and ``MAX_RETRIES`` do."""
    s = toolcalling_settings
    factory = s.CLIENT_FACTORY or (OFFLINE_CLIENT_FACTORY if s.OFFLINE_MODEL else None)
    if factory:
        return import_string(factory)()
    return openai.OpenAI(
        api_key=s.API_KEY or "not-set", base_url=s.BASE_URL, timeout=s.TIMEOUT, max_retries=s.MAX_RETRIES
    )
