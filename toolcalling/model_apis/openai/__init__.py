"""The model APIs of the ``openai`` SDK: Chat Completions (OpenAI's and every OpenAI-compatible server's) and
OpenAI's Responses API. Both build their clients from ``TOOLCALLING`` the same way (``_clients``), post their
JSON through the SDK's own client and read answers strictly; each converts the typed history to its wire form.
"""

from ._chat_completions import ChatCompletions
from ._responses import Responses, needs_responses

__all__ = ["ChatCompletions", "Responses", "needs_responses"]
