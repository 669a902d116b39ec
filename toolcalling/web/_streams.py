"""Turns over HTTP that every edge runs the same way: a streamed turn (server-sent events, in whichever wire format the
edge renders them) and a turn queued for a worker, and the SSE answer's content negotiation.

A streamed turn publishes to the conversation's event stream and the response reads that stream back. Under
WSGI the turn runs in a thread of its own and the response is read by the request's thread; under ASGI the turn
runs on the process's turn loop and the response is read on the server's loop, so neither holds a thread while
the model answers. So the POST answer, the events endpoint and a later reconnect all carry the
same numbered events, and a client that hangs up mid-answer resumes from its last event id.
"""

from __future__ import annotations

import logging
import math
import threading

from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections, connections, transaction
from django.http import HttpResponseBase
from django.utils import translation
from django.utils.translation import gettext as _
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request

from .. import streaming
from ..engine import RUN_TURN, Turn, drive, enqueue, start_on_turn_loop
from ..exceptions import EventsUnavailable, TaskQueueUnavailable, TurnError
from ..storage import write_db
from ._lost_database import DatabaseGuard

logger = logging.getLogger("toolcalling")


def accepts_event_stream(request: Request) -> bool:
    return streaming.MEDIA_TYPE in request.META.get("HTTP_ACCEPT", "")


def is_asgi(request: Request) -> bool:
    return isinstance(getattr(request, "_request", request), ASGIRequest)


def on_turn_loop(request: Request, turn: Turn) -> bool:
    """Whether the turn runs on the turn loop, holding no thread while the model answers: under ASGI, unless the
    caller holds a transaction open (a test's, say), whose rows the loop's threads could not see."""
    return is_asgi(request) and not transaction.get_connection(write_db(turn.conversation)).in_atomic_block


def release_connections() -> None:
    """Under ASGI, what the request's thread holds of the database, let go once the turn is handed to the turn
    loop: the thread then only waits for the response to end, and a connection kept open by each of a few hundred
    streams or answers would exceed the database's limit. (Django closes them at the request's end, by
    ``CONN_MAX_AGE``; a caller's open transaction keeps them.)"""
    if not any(c.in_atomic_block for c in connections.all(initialized_only=True)):
        close_old_connections()


class EventStreamMixin:
    """Lets a DRF view answer ``Accept: text/event-stream``: the stream itself is a plain Django
    response, and every other answer (validation errors, 404, 409) stays JSON."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        if accepts_event_stream(request):
            renderer = JSONRenderer()
            return renderer, renderer.media_type
        return super().perform_content_negotiation(request, force)  # type: ignore[misc]


def stream_turn(
    request: Request, turn: Turn, content: str, renderer: streaming.Renderer | None = None
) -> HttpResponseBase:
    """Claim the conversation (``ConversationBusy`` propagates: the caller answers 409), run the turn (in a
    thread under WSGI, on the turn loop under ASGI), and stream its events until ``turn_end`` (written by
    ``renderer``: the app's own SSE unless a frontend protocol's is given)."""
    conversation_id = turn.conversation.pk
    store = streaming.get_store()
    # Never raises: with the store unreachable the turn streams from this process (its in-process fallback).
    # Before the claim, whose ``message`` event is the stream's first.
    backend, after = store.for_stream(str(conversation_id))
    try:
        # The message is stored with the claim, on disk before the 200: the process that runs the turn may die
        # before it would have stored it.
        turn.claim(content=content, durable=True)
    except BaseException:
        store.release(str(conversation_id))
        raise
    done = threading.Event()
    language = translation.get_language()  # the request's: the turn's thread or task starts with none of its own
    asgi = is_asgi(request)
    looped = on_turn_loop(request, turn)

    def ended(exc: BaseException | None) -> None:
        if isinstance(exc, TurnError):
            # Stored as the conversation's error and published as an ``error`` event by the turn.
            logger.info("streamed turn of %s failed: %s", conversation_id, exc)
        elif exc is not None:
            logger.error("streamed turn of %s stopped on an internal error", conversation_id, exc_info=exc)
        store.release(str(conversation_id))  # the reader keeps its backend and reads on to turn_end
        done.set()

    def work() -> None:
        error: BaseException | None = None
        try:
            with translation.override(language):
                turn.run(None, claimed=True)  # the claim stored the message
        except Exception as exc:
            error = exc
        finally:
            ended(error)
            connections.close_all()  # this thread's connections only

    async def awork() -> None:
        error: BaseException | None = None
        try:
            with translation.override(language):
                await drive(turn, None, claimed=True)  # the claim stored the message
        except Exception as exc:
            error = exc
        finally:
            ended(error)

    if looped:
        start_on_turn_loop(awork())
        release_connections()
    else:
        # Not a daemon: a turn whose reader hung up still finishes and is stored.
        threading.Thread(target=work, name=f"toolcalling-turn-{conversation_id}").start()
    if renderer is not None and renderer.uses_database:
        renderer = DatabaseGuard(renderer)
    follower = streaming.Follower(
        after, until=lambda e: e.type == "turn_end", idle_timeout=math.inf, finished=done.is_set, renderer=renderer
    )
    return streaming.sse_response(conversation_id, follower, asgi=asgi, backend=backend)


def queue_turn(turn: Turn, content: str) -> int:
    """Claim the conversation and queue the turn for a Celery worker; the number of the stream's last event
    before it, to follow the turn from (``TaskQueueUnavailable`` when the broker cannot be reached)."""
    conversation = turn.conversation
    try:
        after = streaming.last_seq(conversation.pk)
    except EventsUnavailable:  # the turn runs all the same; its events are lost, the history has them
        after = 0
    # The message is stored with the claim, on disk before the 202: the job may be lost (Redis restarted empty,
    # its worker killed) or come after the sweep took the quiet turn over, which then answers the message.
    token = turn.claim(content=content, durable=True)
    try:
        enqueue(RUN_TURN, str(conversation.pk), None, str(token))
    except TaskQueueUnavailable:
        # Never started: the conversation is idle again, its message gone, and the turn its claim counted undone.
        turn.release()
        conversation.refresh_from_db(fields=["status", "error"])
        raise TaskQueueUnavailable(_("The turn could not be queued; try again."), status=conversation.status)
    return after
