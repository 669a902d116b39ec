"""Test doubles for tool-calling models: scripted replies, replays of recorded conversations, a local server
(Chat Completions, Responses and Anthropic Messages) and an in-process transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx2

from .backend import ChatBackend, Responder
from .replay import ReplayModel
from .rules import validate_chat_request
from .rules_anthropic import validate_messages_request
from .rules_responses import validate_responses_request
from .scripted import Reply, ScriptedModel, SentUsage, ToolCall, Usage
from .server import OpenAICompatibleServer

__all__ = [
    "OpenAICompatibleServer",
    "ReplayModel",
    "Reply",
    "Responder",
    "ScriptedModel",
    "SentUsage",
    "ToolCall",
    "Usage",
    "mock_transport",
    "validate_chat_request",
    "validate_messages_request",
    "validate_responses_request",
]


class _BackendTransport(httpx2.MockTransport):
    """MockTransport that also streams correctly for AsyncClient.

    A plain MockTransport hands back the same Response to both client kinds, but a response built
    from a sync iterator cannot be read by an AsyncClient, so the async path wraps the chunks.
    """

    def __init__(self, backend: ChatBackend) -> None:
        self.backend = backend
        super().__init__(self._handle_sync)

    def _call(self, request: httpx2.Request) -> tuple[int, dict[str, str], bytes | Iterator[bytes]]:
        path = request.url.raw_path.decode("ascii")
        headers = {key.lower(): value for key, value in request.headers.items()}
        return self.backend.handle(request.method, path, headers, request.content)

    def _handle_sync(self, request: httpx2.Request) -> httpx2.Response:
        status, headers, payload = self._call(request)
        return httpx2.Response(status, headers=headers, content=payload)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        status, headers, payload = self._call(request)
        if isinstance(payload, bytes):
            return httpx2.Response(status, headers=headers, content=payload)

        async def chunks(source: Iterator[bytes] = payload) -> AsyncIterator[bytes]:
            for chunk in source:
                yield chunk

        return httpx2.Response(status, headers=headers, content=chunks())


def mock_transport(
    responder: Responder, *, model_name: str | None = None, require_auth: bool = True
) -> httpx2.MockTransport:
    """An in-process transport serving ``responder`` through the same ChatBackend as the HTTP server.

    Use it as ``openai.OpenAI(base_url=..., api_key="x", http_client=httpx2.Client(transport=...))``;
    it works with ``httpx2.AsyncClient`` too.
    """
    return _BackendTransport(ChatBackend(responder, model_name=model_name, require_auth=require_auth))
