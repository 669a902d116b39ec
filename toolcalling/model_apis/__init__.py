"""Model APIs: the one interface the loop speaks to (``ModelAPI``), and the Chat Completions implementation.

``get_model_api()`` gives the site's, built from ``TOOLCALLING`` once (and again when the setting changes).
"""

from __future__ import annotations

import openai
from django.utils.module_loading import import_string

from ..conf import OFFLINE_CLIENT_FACTORY, toolcalling_settings
from ._base import DeltaCallback, Features, ModelAPI, ModelReply, RequestedCall, Usage
from ._chat_completions import ChatCompletions

__all__ = [
    "ChatCompletions",
    "DeltaCallback",
    "Features",
    "ModelAPI",
    "ModelReply",
    "RequestedCall",
    "Usage",
    "build_openai_client",
    "get_model_api",
]


def get_model_api() -> ModelAPI:
    """The site's model API, built from ``TOOLCALLING`` once (and again when the setting changes)."""
    return toolcalling_settings.derived("model_api", lambda: ChatCompletions(build_openai_client()))


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
