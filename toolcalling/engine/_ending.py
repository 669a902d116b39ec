"""How a turn ends: stored once with its status, or failed, ended by a hook, or taken over after going quiet.

``Turn`` inherits these; they are apart only so that each module stays short. Every way out of
``Turn.iter()`` passes through ``guard()``: a hook's ``EndTurn`` ends the turn with its message, an error
fails it (every open call answered, so the next message works), and a lost claim abandons it (nothing more
may be written).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError
from django.utils.translation import gettext as _

from ..exceptions import TurnError, TurnInterrupted, TurnNotStored
from ..hooks import EndTurn
from ..models import Conversation, Message

if TYPE_CHECKING:
    from ..hooks import TurnView
    from ..usage import Meter
    from . import _storage as storage
    from ._calls import CallPath
    from ._observers import Observers

logger = logging.getLogger("toolcalling")

IDLE = Conversation.Status.IDLE
AWAITING_APPROVAL = Conversation.Status.AWAITING_APPROVAL
FAILED = Conversation.Status.FAILED
STOPPED = "stopped"  # how a turn ends when its owner stopped it: the conversation is idle again
STOPPED_REASON = "stopped by the user."


class TurnEnding:
    """The ends of a ``Turn``."""

    conversation: Conversation
    view: TurnView
    hooks: list[Any]
    meter: Meter
    ledger: storage.Ledger
    observers: Observers
    calls: CallPath
    ended: bool

    def record(self, message: Message) -> None:
        raise NotImplementedError

    def take_over(self) -> bool:
        raise NotImplementedError

    def announce_opening(self) -> None:
        raise NotImplementedError

    def end(self, status: str, error: str = "") -> None:
        """Store how the turn ended and tell everyone; once. A ``stopped`` turn leaves the conversation ``idle``."""
        if self.ended:
            return
        self.ended = True
        if status == STOPPED:
            self.view.stopped = True
            for message in self.ledger.close_open_calls(STOPPED_REASON, started=self.calls.started, waiting=True):
                self.record(message)
            status = IDLE
        self.ledger.set_status(status, error)
        self.announce_opening()  # when the turn's end was its first write
        try:
            for hook in reversed(self.hooks):
                hook.on_turn_end(self.view, self.view.messages)
            self.observers.turn_ended()
        finally:
            self.observers.turn_closed()

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Around the steps: ``EndTurn`` ends the turn with its message; an error fails it and is raised on."""
        try:
            try:
                yield
            except EndTurn as end:
                self.end_early(end.message)
            except TurnInterrupted:
                raise
            except TurnError as exc:
                self.fail(str(exc), exc.code)
                exc.status, exc.messages = self.conversation.status, list(self.view.messages)
                raise
            except GeneratorExit:  # the consumer of ``Turn.iter()`` let go of it before the end
                self.fail("the turn was stopped by its caller.")
                raise
            except BaseException as exc:
                if isinstance(exc, DatabaseError) or (self.ledger.failed and isinstance(exc, OverflowError)):
                    # A write failed in the database (or could not be sent to it): the turn ends failed with an
                    # error of its own, and without the write that failed (see ``Ledger.failed``).
                    error = TurnNotStored()
                    self.fail(str(error.detail), error.code)
                    error.status, error.messages = self.conversation.status, list(self.view.messages)
                    raise error from exc
                self.fail(_("The turn stopped on an internal error."))
                raise
        except TurnInterrupted as exc:
            # The claim is gone: nothing more may be written, and the stream now belongs to whoever holds it.
            # What the turn used still counts.
            self.ledger.end_counts()
            self.ended = True
            self.observers.turn_abandoned(str(exc))
            exc.messages = list(self.view.messages)
            raise

    def fail(self, error: str, code: str = TurnError.default_code) -> None:
        """End the turn as ``failed`` with every open call answered, so the next message works. If answering
        them fails too, the turn still ends: a conversation left ``running`` takes no message until it is swept.
        ``code`` is the error's API code, which the ``error`` event carries."""
        try:
            closed = self.ledger.close_open_calls("the turn ended with an error.", started=self.calls.started)
        except (DatabaseError, OverflowError):
            logger.exception("the open calls of conversation %s could not be answered", self.conversation.pk)
            closed = []
        for message in closed:
            self.record(message)
        self.observers.turn_failed(error, code)
        self.end(FAILED, error)

    def end_early(self, message: str) -> None:
        """A hook raised ``EndTurn``: answer any open call, then its message is the reply."""
        reason = "the turn was ended before this call was answered."
        for closed in self.ledger.close_open_calls(reason, started=self.calls.started):
            self.record(closed)
        self.record(self.ledger.add_message(Message.Role.ASSISTANT, message))
        self.end(IDLE)

    def end_stale(self) -> bool:
        """End a turn whose process went quiet for ``STALE_TURN_TIMEOUT`` (it cannot hear a stop request) as
        stopped: it is taken over, its open calls answered as after any takeover. False if it was not quiet."""
        if not self.take_over():
            return False
        with self.guard():
            self.end(STOPPED)
        return True
