"""The persisting baseline of ``bench/asgi_load.py``: the bare view plus what a developer's own streamed chat view
must do to store the turn with the ORM and offer each user only the tools they may use.

``POST /bench/persisting/turn/<conversation id>/`` with ``{"content": "..."}`` and ``Accept: text/event-stream``:
the view authenticates the user as the bare view does (``bench/_bare_view.py``), then in one hand-off to Django's
sync thread loads the user's conversation (404 if it is not theirs), works out the tools this user may use
(``assistant.get_tools``, which checks the user's permissions: every request, as a real view must, where the bare
view does it once per process), stores the user's message in a transaction that also sets the conversation
``running``, reads the stored history back with a plain ``values_list`` as Chat Completions messages (the
assistant's instructions first, as the app sends them, so the request grows with the history as the app's does)
and gives its database connection back. It streams the model's deltas as the bare view does, then in a second
hand-off stores the answer with its model and token counts and adds those to the conversation's totals, setting
it ``idle`` (one ``update()`` with ``F()`` expressions), in one transaction, and gives the connection back.

The same rows as the hand-written persisting loop of ``bench/loop_overhead.py`` (``bench/_persisting_loop.py``),
the fair baseline for a loop that persists: nothing else is stored, no claim or fencing of the turn, no usage
counters, no events. One model request a turn (the bench's ``--requests 1``), as the bare view.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import F
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from bench._bare_view import authenticated_user, close_connection, model_client, not_authenticated, sse
from toolcalling import Assistant
from toolcalling.models import Conversation, Message


@dataclass
class _Request:
    """What the turn asks the model: its model, the stored history as messages, this user's tools."""

    model: str
    messages: list[Any]  # plain dicts, as the app sends them
    tools: list[Any]


def _start(user: Any, conversation_id: uuid.UUID, content: str) -> _Request | None:
    """Store the user's message and set the conversation running; the model request of the turn (``None``: no
    conversation of this user's with that id). The connection goes back before the model is asked."""
    try:
        conversation = Conversation.objects.filter(pk=conversation_id, user=user).first()
        if conversation is None:
            return None
        assistant = Assistant.get(conversation.assistant_id)
        ctx = assistant.build_context(user, conversation)
        tools = [t.definition() for t in assistant.get_tools(ctx)]
        with transaction.atomic():
            Message.objects.create(conversation=conversation, role=Message.Role.USER, content=content)
            Conversation.objects.filter(pk=conversation.pk).update(
                status=Conversation.Status.RUNNING, updated_at=timezone.now()
            )
        rows = conversation.messages.order_by("id").values_list("role", "content")
        messages: list[Any] = [{"role": "system", "content": assistant.get_instructions(ctx)}]
        messages += [{"role": role, "content": text} for role, text in rows]
        return _Request(assistant.get_model(), messages, tools)
    finally:
        close_connection()


def _finish(conversation_id: uuid.UUID, content: str, model: str, prompt: int, completion: int) -> None:
    """Store the answer with its token counts, add them to the conversation's totals and set it idle."""
    try:
        with transaction.atomic():
            Message.objects.create(
                conversation_id=conversation_id,
                role=Message.Role.ASSISTANT,
                content=content,
                model=model,
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=prompt + completion,
            )
            Conversation.objects.filter(pk=conversation_id).update(
                prompt_tokens=F("prompt_tokens") + prompt,
                completion_tokens=F("completion_tokens") + completion,
                total_tokens=F("total_tokens") + prompt + completion,
                status=Conversation.Status.IDLE,
                updated_at=timezone.now(),
            )
    finally:
        close_connection()


@csrf_exempt  # as DRF's views are: the session's CSRF check would refuse the bench client's Basic-auth POST
@require_POST
async def persisting_turn(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponseBase:
    user = await authenticated_user(request)
    if user is None:
        return not_authenticated()
    content = json.loads(request.body)["content"]
    asked = await sync_to_async(_start)(user, conversation_id, content)
    if asked is None:
        return JsonResponse({"detail": "Not found.", "code": "not_found", "status": None}, status=404)
    stream = await model_client().chat.completions.create(
        model=asked.model,
        messages=asked.messages,
        tools=asked.tools,
        stream=True,
        stream_options={"include_usage": True},
    )

    async def events() -> AsyncIterator[str]:
        pieces: list[str] = []
        model, prompt, completion = "", 0, 0
        async with stream:
            async for chunk in stream:
                model = chunk.model or model
                if chunk.usage is not None:
                    prompt, completion = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
                for choice in chunk.choices:
                    if choice.delta.content:
                        pieces.append(choice.delta.content)
                        yield sse("delta", {"content": choice.delta.content})
        await sync_to_async(_finish)(conversation_id, "".join(pieces), model, prompt, completion)
        yield sse("turn_end", {"status": "idle"})

    return StreamingHttpResponse(events(), content_type="text/event-stream")
