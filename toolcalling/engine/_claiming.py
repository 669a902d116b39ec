"""How a turn claims its conversation: only one turn runs per conversation at a time, and its usage limits are
decided in the claim's transaction.

``Turn`` inherits these; they are apart only so that each module stays short. The claim stores the user's
message with it (or, for a conversation nobody can know yet, leaves both to the turn's first write), takes
over a turn that went quiet, and is given back when a queued turn never ran.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils.translation import gettext as _

from ..attachments import attach
from ..conf import toolcalling_settings
from ..exceptions import ConversationBusy
from ..models import Attachment, Conversation, Message, ToolCall
from ..usage import Usage as Counts
from . import _memory as memory
from . import _storage as storage
from ._ending import AWAITING_APPROVAL, FAILED, IDLE

if TYPE_CHECKING:
    from ..usage import Meter


class TurnClaim:
    """The claim of a ``Turn``."""

    conversation: Conversation
    meter: Meter
    ledger: storage.Ledger
    creating: bool
    attachments: Sequence[Attachment]
    history: memory.History
    opening: Message | None
    continuing: bool
    turn_counted: bool
    claimed_message: Message | None = None  # the user's message ``claim`` stored, which ``release`` takes back

    def record(self, message: Message) -> None:
        raise NotImplementedError

    def claim(
        self, *, continuing: bool = False, content: str | None = None, direct_calls: int = 0, durable: bool = False
    ) -> uuid.UUID:
        """Mark the conversation ``running`` and hold its claim; only one turn runs per conversation at a time.

        ``content``, the user's message, is stored in the same transaction as the claim. A new message is a
        turn its usage limits must have room for: decided in that transaction too, on the counters locked
        there, so parallel messages never start more turns than a limit allows (``UsageLimitExceeded``, the
        claim undone). ``direct_calls``: the calls a client asked for directly (an MCP client): no message, so
        no turn, but tool calls that the ``tool_calls`` limits judge and count the same way (they spend no
        tokens and no money). A transaction the database rolls back for a deadlock is tried again. ``durable``:
        the commit waits for the disk (the caller acknowledges the message before any later write of the turn)."""
        self.continuing = continuing
        reserve = not continuing
        if reserve and direct_calls:
            self.meter.limits = [(limit, key) for limit, key in self.meter.limits if limit.quantity == "tool_calls"]
            self.meter.check(new_turn=False, status=self.conversation.status)
            self.meter.prepare()
            self.meter.add(tool_calls=direct_calls)  # counted here when limits apply, else with the turn's end
        elif reserve:
            self.meter.check(new_turn=True, status=self.conversation.status)  # the common refusal: no write at all
            self.meter.prepare()
            self.meter.add(turns=1)  # counted here when limits apply, else with the turn's end
            self.turn_counted = True
        title = " ".join(content.split())[:80] if content is not None else None
        if self.creating and content is not None and not self.attachments and not (reserve and self.meter.urgent):
            # Nobody can know the conversation before it is stored, nor need refusing: the first write stores it
            # (a message with files is stored here: its uploads are given to it in the same transaction).
            token, self.opening = self.ledger.claim_later(content, title or "")
            self.history.extend(storage.to_openai([self.opening]))
            return token
        conv, pending = self.conversation, self.meter.pending
        before = conv.status, conv.error, conv.turn_token

        def attempt() -> tuple[uuid.UUID, Message | None]:
            self.meter.pending = pending
            with transaction.atomic(using=self.ledger.db):
                if not durable:
                    storage.relax_durability(self.ledger.db)  # the turn's first durable write (calls, end) takes it
                token = self._claim(continuing, title)
                opening = None
                if content is not None:  # the claim just made is the fence of this write
                    opening = storage.add_message(conv, Message.Role.USER, content)
                    attach(opening, self.attachments)
                if reserve and self.meter.urgent:  # the turn, and the message with it, only if a limit has room
                    self.ledger.count_usage(reserve=True, status=before[0])
            return token, opening

        try:
            token, opening = storage.with_retries(attempt, self.ledger.db)
        except BaseException:
            conv.status, conv.error, conv.turn_token = before  # rolled back with the claim
            conv._state.adding = self.creating  # and a conversation it inserted with it
            self.ledger.token = None
            raise
        if opening is not None:
            self.claimed_message = opening
            self.record(opening)
        return token

    def release(self) -> bool:
        """Give back the claim ``claim()`` made for a turn that will not run (its task could not be queued):
        the conversation is ``idle`` again, the message the claim stored is deleted and the turn the claim
        counted is taken back, so the counters still equal the stored messages. False if the claim was lost
        meanwhile."""
        counted = (
            Counts(turns=1) if self.turn_counted and self.meter.urgent and not self.meter.pending.turns else Counts()
        )
        return self.ledger.release(counted, self.claimed_message)

    def _claim(self, continuing: bool, title: str | None = None) -> uuid.UUID:
        conv = self.conversation
        if self.creating:  # a try again after a rollback inserts it again
            self.ledger.token = storage.claim_new(conv, title=title or "")
            return self.ledger.token
        if continuing:
            self.ledger.token = storage.claim(conv, from_statuses=[AWAITING_APPROVAL])
            if self.ledger.token is None:
                raise ConversationBusy(_("The conversation is not waiting to continue."), status=conv.status)
            return self.ledger.token
        token = self.ledger.token = storage.claim(conv, from_statuses=[IDLE, FAILED], title=title)
        if token is not None:
            return token
        if self.take_over():
            assert self.ledger.token is not None
            if title is not None:
                self.ledger.set_title_if_empty(title)
            return self.ledger.token
        conv.refresh_from_db(fields=["status"])
        if conv.status == AWAITING_APPROVAL:
            yours = conv.tool_calls.filter(status=ToolCall.Status.AWAITING_APPROVAL, approver="user").exists()
            raise ConversationBusy(
                _("A tool call waits for you to confirm or decline it first.")
                if yours
                else _(
                    "The conversation is waiting for a staff member to approve a tool call. "
                    "Wait for the decision or cancel the waiting calls."
                ),
                status=conv.status,
            )
        raise ConversationBusy(status=conv.status)

    def take_over(self) -> bool:
        """Claim the conversation if its turn went quiet for ``STALE_TURN_TIMEOUT`` (its process died, or hangs)."""
        self.ledger.token = storage.claim(
            self.conversation, from_statuses=[], stale_after=toolcalling_settings.STALE_TURN_TIMEOUT
        )
        if self.ledger.token is None:
            return False
        # Answer the calls the quiet turn left open; its own late writes will be refused. Its running tools may
        # or may not have taken effect.
        for message in self.ledger.close_open_calls("the turn was interrupted.", started=None):
            self.record(message)
        return True
