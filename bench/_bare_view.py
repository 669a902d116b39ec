"""The baseline of ``bench/asgi_load.py``: a bare Django async view that streams one model answer and stores nothing.

``POST /bench/bare/turn/`` with ``{"content": "..."}`` and ``Accept: text/event-stream``: the view authenticates
the user as the app's API does (the session first, else HTTP Basic credentials, which the bench client sends), gives
its database connection back, makes the streamed Chat Completions request the app's ``helper`` assistant makes for
a conversation's first turn — its instructions as the system message, the user's text, the tools this user is
offered, through the async openai SDK to the same model server — and streams each text delta back as an SSE
``delta`` event, then a ``turn_end`` saying ``idle``. Nothing is read or written but the user. What the request
holds (model, system message, tools) is worked out once per process, for the first user who asks: the bench's
users all hold the same permissions. ``bench/asgi_load.py`` checks that the model server gets the same request
from both sides (``bench._model.PROBE``) before it measures.

Served by ``bench._bare_settings``: the test site's settings and URLs plus this view's. Its helpers (the user's
authentication, the model client, the SSE events) are shared with the persisting view (``bench/_persisting_view.py``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
from asgiref.sync import sync_to_async
from django.contrib.auth import aauthenticate
from django.db import connection
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from toolcalling import Assistant
from toolcalling.conf import toolcalling_settings

ASSISTANT = "helper"  # the test site's assistant, whose conversations the bench makes

_client: openai.AsyncOpenAI | None = None  # one per process: uvicorn's worker runs one event loop
_request: dict[str, Any] | None = None  # model, system message and tools, worked out at the first turn


def _model_request(user: Any) -> dict[str, Any]:
    """What the app's assistant sends for ``user``'s first turn, but the messages' user text."""
    assistant = Assistant.get(ASSISTANT)
    ctx = assistant.build_context(user)
    return {
        "model": assistant.get_model(),
        "system": assistant.get_instructions(ctx),
        "tools": [t.definition() for t in assistant.get_tools(ctx)],
    }


async def authenticated_user(request: HttpRequest) -> Any:
    """The request's user as the app's API finds it: the session's, else its HTTP Basic credentials'; or ``None``."""
    user = await request.auser()
    return user if user.is_authenticated else await _basic_user(request)


def not_authenticated() -> HttpResponseBase:
    return JsonResponse({"detail": "Not authenticated.", "code": "not_authenticated", "status": None}, status=401)


def model_client() -> openai.AsyncOpenAI:
    """The process's async openai client, made at its first turn with the app's settings."""
    global _client
    if _client is None:
        s = toolcalling_settings
        _client = openai.AsyncOpenAI(api_key=s.API_KEY, base_url=s.BASE_URL, timeout=s.TIMEOUT,
                                     max_retries=s.MAX_RETRIES)  # fmt: skip
    return _client


async def _basic_user(request: HttpRequest) -> Any:
    """The active user of the request's HTTP Basic credentials, as DRF's ``BasicAuthentication`` finds them."""
    kind, _, encoded = request.headers.get("Authorization", "").partition(" ")
    if kind.lower() != "basic":
        return None
    try:
        username, _, password = base64.b64decode(encoded).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user = await aauthenticate(request, username=username, password=password)
    return user if user is not None and user.is_active else None


def close_connection() -> None:
    connection.close()  # looked up in the thread that runs it, where the request's connection is


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


@csrf_exempt  # as DRF's views are: the session's CSRF check would refuse the bench client's Basic-auth POST
@require_POST
async def bare_turn(request: HttpRequest) -> HttpResponseBase:
    global _request
    user = await authenticated_user(request)
    if user is None:
        return not_authenticated()
    content = json.loads(request.body)["content"]
    if _request is None:
        _request = await sync_to_async(_model_request)(user)
    # The database is done with: give the request's connection back (to the pool under uvicorn) rather than hold
    # it while the model answers, as the app's turn does; held, 100 streams a worker wait for a pool of 40.
    await sync_to_async(close_connection)()
    stream = await model_client().chat.completions.create(
        model=_request["model"],
        messages=[{"role": "system", "content": _request["system"]}, {"role": "user", "content": content}],
        tools=_request["tools"],
        stream=True,
        stream_options={"include_usage": True},
    )

    async def events() -> AsyncIterator[str]:
        async with stream:
            async for chunk in stream:
                for choice in chunk.choices:
                    if choice.delta.content:
                        yield sse("delta", {"content": choice.delta.content})
        yield sse("turn_end", {"status": "idle"})

    return StreamingHttpResponse(events(), content_type="text/event-stream")
