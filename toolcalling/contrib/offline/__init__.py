"""The offline demo model: a deterministic keyword matcher that answers like a tool-calling chat model.

``TOOLCALLING["OFFLINE_MODEL"] = True`` selects it (through ``client``, by its dotted path): the
demo then runs through the real ``openai`` SDK with no network and no key. It is no language model.
"""

from __future__ import annotations

import openai

from ._model import (
    OFFLINE_BASE_URL,
    OFFLINE_MODEL_NAME,
    OfflineModel,
    offline_async_http_client,
    offline_http_client,
)

__all__ = [
    "OFFLINE_BASE_URL",
    "OFFLINE_MODEL_NAME",
    "OfflineModel",
    "client",
    "offline_async_http_client",
    "offline_http_client",
]


def client() -> openai.OpenAI:
    """The ``openai.OpenAI`` client whose requests the offline model answers in this process."""
    return openai.OpenAI(api_key="offline", base_url=OFFLINE_BASE_URL, http_client=offline_http_client(), max_retries=0)
