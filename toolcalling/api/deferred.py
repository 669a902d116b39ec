"""The JSON answer of a turn under ASGI: the view claims the conversation and hands the turn to the turn loop,
and the response is rendered once the turn has ended, awaited on the server's event loop (Django awaits a
response's async ``render``), so the request holds no thread while the model answers.

Everything a view decides before the turn (authentication, throttles, validation, the busy 409) is decided as
before; the turn's own errors get the API's one shape, as they would from ``turn.run``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.utils import translation
from rest_framework.response import Response
from rest_framework.views import APIView

from ..engine import Turn, drive, start_on_turn_loop
from ..models import Message
from ..web import database_lost, release_connections


class TurnResponse(Response):
    """A DRF ``Response`` whose data and status are those of the turn's end: ``answer(messages)`` gives the body
    of a turn that ended, the view's ``handle_exception`` the body of one that failed."""

    def __init__(self, view: APIView, turn: Turn, content: str, answer: Callable[[list[Message]], Response]) -> None:
        super().__init__()
        self.view = view
        self.answer = answer
        self.running = turn
        language = translation.get_language()  # the request's: the turn's task starts with none of its own

        async def run() -> list[Message]:
            with translation.override(language):
                return await drive(turn, content, claimed=True)

        turn.claim()  # ConversationBusy propagates from here: the view answers 409 before anything runs
        self.turn = start_on_turn_loop(run())
        release_connections()

    async def render(self) -> Response:  # type: ignore[override]  # Django awaits an async render
        try:
            # Shielded: a client that hangs up cancels this wait, never the turn, which ends and is stored.
            ended: list[Message] | Exception = await asyncio.shield(asyncio.wrap_future(self.turn))
        except Exception as exc:
            ended = database_lost(self.running, exc)
        await sync_to_async(self.finish)(ended)  # one hand-off to a thread for the body and its rendering
        return self

    def finish(self, ended: list[Message] | Exception) -> None:
        """Take the data, status and headers of the turn's end (its messages, or the error it raised) and
        render them."""
        outcome = self.view.handle_exception(ended) if isinstance(ended, Exception) else self.answer(ended)
        self.data, self.status_code = outcome.data, outcome.status_code
        for header, value in outcome.items():
            if header.lower() != "content-type":
                self[header] = value
        super().render()
