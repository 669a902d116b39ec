"""Helpers for a site's own tests: point the app at a local scripted model server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.test import override_settings

from .testing import OpenAICompatibleServer, ScriptedModel


@contextmanager
def override_model(model: Any = None, **toolcalling: Any) -> Iterator[Any]:
    """Serve ``model`` (a ``ScriptedModel`` by default) on a local strict server and use it for every turn.

    ``toolcalling`` keys are merged into ``settings.TOOLCALLING`` for the duration::

        with override_model() as model:
            model.call("get_order_status", {"order_no": "20250719-0032"})
            model.reply("It has shipped.")
            client.post(url, {"content": "Where is my order?"})
    """
    model = model if model is not None else ScriptedModel()
    with OpenAICompatibleServer(model) as server:
        merged = {
            **getattr(settings, "TOOLCALLING", {}),
            "BASE_URL": server.base_url,
            "API_KEY": "test-key",
            "MAX_RETRIES": 0,
            "OFFLINE_MODEL": False,
            **toolcalling,
        }
        with override_settings(TOOLCALLING=merged):
            yield model


@contextmanager
def override_toolcalling(**values: Any) -> Iterator[None]:
    """Change some ``TOOLCALLING`` keys, keeping the others (``override_settings`` replaces the whole dict)."""
    with override_settings(TOOLCALLING={**getattr(settings, "TOOLCALLING", {}), **values}):
        yield
