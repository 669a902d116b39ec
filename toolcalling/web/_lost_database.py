"""A stream whose reader loses the database: it ends with the error, in its own wire format, instead of breaking off."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.utils.translation import gettext as _

from .. import streaming
from ..exceptions import DatabaseUnavailable

logger = logging.getLogger("toolcalling")


class DatabaseGuard:
    """Renders as ``renderer`` does (one that reads the database as events arrive: the AI SDK's, AG-UI's) until the
    database goes away under it (a server restarting, the connection cut): the error is logged, and the stream
    goes on as a turn's that failed with ``database_unavailable`` (its ``error`` event, then its ``turn_end`` with
    the status ``failed``, as far as a reader without a database can know), so the client reads an error and the
    stream's proper end, never a response broken off mid-way. What comes after is left out."""

    def __init__(self, renderer: streaming.Renderer) -> None:
        self.renderer = renderer
        self.uses_database = renderer.uses_database
        self.seq = 0  # the last event rendered
        self.lost = False

    def opening(self, after: int) -> str:
        self.seq = after
        try:
            return self.renderer.opening(after)
        except (OperationalError, InterfaceError) as exc:
            return self.lose(exc)

    def render(self, event: streaming.Event) -> str:
        if self.lost:
            return ""
        try:
            text = self.renderer.render(event)
        except (OperationalError, InterfaceError) as exc:
            return self.lose(exc)
        self.seq = event.seq
        return text

    def closing(self) -> str:
        try:
            return self.renderer.closing()
        except (OperationalError, InterfaceError) as exc:
            if self.lost:
                logger.error("the end of a stream whose reader lost the database could not be written", exc_info=exc)
                return ""
            return self.lose(exc) + self.closing()

    def lose(self, exc: Exception) -> str:
        """The database went away: the error and the turn's end, as the renderer writes them."""
        logger.error("a stream's reader lost the database", exc_info=exc)
        self.lost = True
        error = DatabaseUnavailable(
            _("The database went away while this answer was read. The conversation's history shows what was kept.")
        )
        ended = [
            streaming.Event(seq=self.seq, type="error", data={"detail": error.detail, "code": error.code}),
            streaming.Event(seq=self.seq, type="turn_end", data={"status": "failed"}),
        ]
        try:
            return "".join(self.renderer.render(event) for event in ended)
        except (OperationalError, InterfaceError):
            return ""
