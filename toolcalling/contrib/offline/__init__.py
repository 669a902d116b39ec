"""The offline demo model: a deterministic keyword matcher that answers like a tool-calling chat model.

``TOOLCALLING["OFFLINE_MODEL"] = True`` selects it (through ``client``, by its dotted path): the
demo then runs through the real ``openai`` SDK with no network and no key. It is no language model.
"""

from __future__ import annotations

from typing import Any

import openai

from ._model import OFFLINE_BASE_URL, offline_http_client

__all__ = ["anthropic_client", "client"]


def client() -> openai.OpenAI:
    """The ``openai.OpenAI`` client whose requests the offline model answers in this process."""
    return openai.OpenAI(api_key="offline", base_url=OFFLINE_BASE_URL, http_client=offline_http_client(), max_retries=0)


def anthropic_client() -> Any:
    """The ``anthropic.Anthropic`` client whose requests the offline model answers in this process (for
    ``API = "anthropic"``; the SDK is the optional ``[anthropic]`` extra)."""
    import anthropic

    base_url = OFFLINE_BASE_URL.removesuffix("/v1")  # the SDK adds /v1 itself
    return anthropic.Anthropic(api_key="offline", base_url=base_url, http_client=offline_http_client(), max_retries=0)
