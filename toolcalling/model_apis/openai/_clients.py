"""The model APIs sent through the ``openai`` SDK (Chat Completions, Responses): their clients as settings describe
them, the SDK's errors and request options, and OpenAI's prices."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar

import openai
from django.utils.module_loading import import_string

from ...conf import OFFLINE_CLIENT_FACTORY, toolcalling_settings
from .._posting import PostedModelAPI


class OpenAIPostedAPI(PostedModelAPI):
    """What the APIs of the ``openai`` SDK share: their clients, the SDK's errors and request options, and the
    provider genai-prices prices them at without a ``BASE_URL``."""

    price_provider = "openai"
    client: openai.OpenAI
    sdk: ClassVar[ModuleType] = openai
    sdk_error = openai.OpenAIError
    default_request_options = {"security": {"bearer_auth": True}}

    @classmethod
    def build_client(cls) -> openai.OpenAI:
        return build_client()

    @classmethod
    def async_client_builder(cls) -> Callable[[], openai.AsyncOpenAI] | None:
        return async_builder()


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
