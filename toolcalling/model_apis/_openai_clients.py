"""The ``openai`` SDK's clients as settings describe them, for the APIs sent through it (Chat Completions,
Responses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
from django.utils.module_loading import import_string

from ..conf import OFFLINE_CLIENT_FACTORY, toolcalling_settings


def build_client() -> openai.OpenAI:
    """The ``openai.OpenAI`` client settings describe: ``CLIENT_FACTORY`` (or the offline model's) builds it,
    else ``API_KEY``, ``BASE_URL``, ``TIMEOUT`` and ``MAX_RETRIES`` do."""
    s = toolcalling_settings
    factory = s.CLIENT_FACTORY or (OFFLINE_CLIENT_FACTORY if s.OFFLINE_MODEL else None)
    if factory:
        return import_string(factory)()
    return openai.OpenAI(**_arguments())


def async_builder() -> Callable[[], openai.AsyncOpenAI] | None:
    """What builds the ``openai.AsyncOpenAI`` client of the same settings (one per event loop); ``None`` when a
    factory builds the client (its async twin is unknown: async turns then wait for the model in a thread)."""
    if toolcalling_settings.CLIENT_FACTORY or toolcalling_settings.OFFLINE_MODEL:
        return None
    arguments = _arguments()
    return lambda: openai.AsyncOpenAI(**arguments)


def _arguments() -> dict[str, Any]:
    s = toolcalling_settings
    return {"api_key": s.API_KEY or "not-set", "base_url": s.BASE_URL, "timeout": s.TIMEOUT,
            "max_retries": s.MAX_RETRIES}  # fmt: skip
