"""The ``anthropic`` SDK's clients as settings describe them, for the Messages API (imported only with it: the
SDK is the optional ``[anthropic]`` extra)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import anthropic
from django.utils.module_loading import import_string

from ...conf import OFFLINE_ANTHROPIC_CLIENT_FACTORY, toolcalling_settings


def build_client() -> anthropic.Anthropic:
    """The ``anthropic.Anthropic`` client settings describe: ``API_KEY`` (else env ``ANTHROPIC_API_KEY``),
    ``BASE_URL`` (else env ``ANTHROPIC_BASE_URL``, else Anthropic's; a trailing ``/v1`` is dropped, as the SDK
    adds it), ``TIMEOUT`` and ``MAX_RETRIES``. ``CLIENT_FACTORY`` builds the openai client only. The offline
    model answers this API too."""
    arguments = _arguments()
    if arguments is None:
        return import_string(OFFLINE_ANTHROPIC_CLIENT_FACTORY)()
    return anthropic.Anthropic(**arguments)


def async_builder() -> Callable[[], anthropic.AsyncAnthropic] | None:
    """What builds the ``anthropic.AsyncAnthropic`` client of the same settings (one per event loop); ``None``
    for the offline model's client (its async twin is unknown: async turns then wait for it in a thread)."""
    arguments = _arguments()
    if arguments is None:
        return None
    return lambda: anthropic.AsyncAnthropic(**arguments)


def _arguments() -> dict[str, Any] | None:
    """The Anthropic client's arguments from settings; ``None`` when the offline model's factory builds it."""
    s = toolcalling_settings
    if s.OFFLINE_MODEL and not s.CLIENT_FACTORY:
        return None
    api_key = s.user_settings.get("API_KEY") or os.environ.get("ANTHROPIC_API_KEY") or "not-set"
    base_url = s.user_settings.get("BASE_URL") or os.environ.get("ANTHROPIC_BASE_URL") or None
    if base_url:
        base_url = base_url.rstrip("/").removesuffix("/v1")
    return {"api_key": api_key, "base_url": base_url, "timeout": s.TIMEOUT, "max_retries": s.MAX_RETRIES}
