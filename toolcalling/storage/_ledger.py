"""A turn's writes, each fenced by the turn's claim on its conversation (``Ledger``; the claim itself is
``_writes.claim``).

A turn writes through a ``Ledger`` that holds the turn's claim (a token stored on the conversation when
it was claimed). Every write is a transaction that first bumps the conversation's ``updated_at`` *where
the conversation still carries that token and is running*: a turn that lost its claim (taken over after
going quiet, or the conversation deleted) writes nothing more, and the row lock that update takes orders
a late write and a takeover one after the other. That update also reports a stop request (see ``_stop``),
and each write stores the usage the turn counted. A call is answered at most once: answers are conditional
updates of the call's status (``_writes``), and the database refuses a second tool message for one call id.

All of it is the ORM's ``update()``, adding with ``usage.Increment``, on the alias the site's router gives for
writes; what decides a write (the fence, the call ids already taken, the usage rows) is read there too. The fence,
sent on every write, is the SQL the ORM built for it once per database and shape of values (``_built``).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, Concatenate, ParamSpec, TypeVar

from django.db import DatabaseError, connections, router, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from ..conf import toolcalling_settings
from ..exceptions import TurnInterrupted
from ..model_apis import ModelReply, ModelRequest, Usage
from ..models import Conversation, Message, ToolCall
from ..toolkit import storable, storable_json, unique_call_ids
from ..usage import UNPRICED, Cost, Counts, Increment, Meter, Pricing, add_cost, cost_increments
from ._built import update_as_built
from ._estimates import estimated_usage
from ._writes import (
    OPEN_CALL_STATUSES,
    RUNNING,
    add_message,
    answer_call_if,
    close_open_calls,
    relax_durability,
    save_together,
    update_call_if,
    with_retries,
    write_db,
)

logger = logging.getLogger("toolcalling")

P = ParamSpec("P")
R = TypeVar("R")
TOKENS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens")


def adds_to_totals(usage: Usage) -> bool:
    """Whether an answer's usage adds to its conversation's totals: tokens, or usage that is unknown (which adds
    an unpriced answer, never a cost of 0)."""
    return bool(usage.total_tokens) or not usage.known


def retried(method: Callable[Concatenate[Ledger, P], R]) -> Callable[Concatenate[Ledger, P], R]:
    """A write of a turn, tried again when the database rolled it back for a transient reason (a deadlock, a
    lock it could not get; see ``with_retries``); once one fails for good, the writes that end the turn carry
    nothing of it (``Ledger.failed``)."""

    @functools.wraps(method)
    def write(self: Ledger, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return with_retries(lambda: method(self, *args, **kwargs), self.db)
        except TurnInterrupted:
            raise
        except BaseException:
            self.failed = True
            raise

    return write


class Ledger:
    """The writes of one turn, each refused once the turn no longer holds its claim (``TurnInterrupted``)."""

    def __init__(
        self,
        conversation: Conversation,
        token: uuid.UUID | None = None,
        meter: Meter | None = None,
        pricing: Pricing | None = None,
    ) -> None:
        self.conversation = conversation
        self.token = token
        self.meter = meter  # the turn's usage counts, stored with its writes
        self.pricing = pricing  # what its answers cost; without it, every answer is unpriced (never free)
        self.ended: str | None = None  # the status a write already ended the turn with
        self.stop_requested = False  # the owner asked the turn to stop, as its last write (or check) found
        self.db = write_db(conversation)  # where the turn's transactions open and its fence is read
        self.failed = False  # a write of this turn raised: the writes that end it carry nothing of it
        # The conversation's call ids, when the turn knows them all (see ``Turn.start``): no query. ``None``: read them.
        self.call_ids: set[str] | None = None
        # The opening message of a conversation claimed unstored (``claim_later``): the first write inserts both.
        self.unsaved: Message | None = None
        self._fences: dict[tuple[uuid.UUID | None, bool], QuerySet[Conversation]] = {}  # see ``_held``

    def _held(self, *, unstopped: bool = False) -> QuerySet[Conversation]:
        """The conversation's row while this turn holds its claim (and, ``unstopped``, no stop was asked for), on the
        write database. Built once per claim: ``update()`` works on a copy, and building the filter costs most."""
        if (self.token, unstopped) not in self._fences:
            held = {"pk": self.conversation.pk, "turn_token": self.token, "status": RUNNING}
            unasked = {"stop_requested_at": None} if unstopped else {}
            self._fences[self.token, unstopped] = Conversation.objects.using(self.db).filter(**held, **unasked)
        return self._fences[self.token, unstopped]

    def _fence(self, values: dict[str, Any], *, unstopped: bool = False) -> int:
        """``_held(unstopped=...).update(**values)``: the rows it changed (1, or 0 once the claim is gone). Sent as SQL
        the ORM built once per database and shape of ``values`` (``update_as_built``): a turn fences every write."""
        filtered = functools.partial(self._held, unstopped=unstopped)
        if self.token is None:
            return filtered().update(**values)
        connection, fields = connections[self.db], Conversation._meta
        where = (  # ``filter()`` takes its lookups in the order of their names: pk, status, [stop_requested_at,] token
            fields.pk.get_db_prep_value(self.conversation.pk, connection),
            RUNNING,
            fields.get_field("turn_token").get_db_prep_value(self.token, connection),
        )
        name = ("fence", unstopped)
        return update_as_built(Conversation, self.db, values, filtered=filtered, filter_name=name, where=where)

    @contextmanager
    def write(
        self,
        *,
        usage: Usage | None = None,
        cost: Cost | None = None,
        ending: str | None = None,
        error: str = "",
        durable: bool = True,
    ) -> Iterator[None]:
        """A transaction in which this turn may write. The update that checks the claim also carries the
        heartbeat, the tokens of a reply (``usage``) with what it cost (``cost``), and the turn's end (``ending``),
        in one statement. That update is also fenced by "no stop requested": only when it finds nothing does a
        second one tell a stop request (``stop_requested``) from a lost claim. Last, it stores the usage the
        ``meter`` counted since the last write.

        ``durable=False`` (a tool's result, tokens of a retried answer) lets the commit return before it is
        on disk, where the database allows: the turn's next durable write (its next answer with calls, or its
        end) carries it there before a tool runs again or the turn reports anything. An answer with calls is
        always durable before its tools run, so a crash can lose a result, never repeat a tool.

        Once a write failed (``failed``), the writes that end the turn carry nothing of it: not its tokens, not
        the usage counted with it, which are stored by themselves once the turn's end is (``end_counts``), so a
        write that cannot succeed (a number out of range) does not keep the turn from ending.
        """
        values: dict[str, Any] = {"updated_at": timezone.now()}
        if usage is not None and adds_to_totals(usage):
            values.update({name: Increment(name, amount) for name in TOKENS if (amount := getattr(usage, name))})
            values.update(cost_increments(cost))
        if ending is not None:
            values.update(status=ending, error=storable(error), turn_token=None, stop_requested_at=None)
        meter, counted = self.meter, None
        inserted = self.unsaved is not None
        with transaction.atomic(using=self.db):
            if not durable and ending is None:
                relax_durability(self.db)
            if inserted:
                self._insert(usage, cost, ending, error)
            elif self.stop_requested or not self._fence(values, unstopped=True):
                if not self._fence(values):
                    logger.warning("a write of a turn of conversation %s was refused: the turn lost its claim",
                                   self.conversation.pk)  # fmt: skip
                    raise TurnInterrupted(status=self._status_now())
                self.stop_requested = True
            yield
            # Last, so the shared rows stay locked only until the commit; without limits, once, at the turn's end.
            if meter is not None and meter.pending and not self.failed and (meter.limited or ending is not None):
                counted = meter.pending
                meter.count(counted, timezone.now())
        if counted is not None and meter is not None:
            meter.stored(counted)
        self.unsaved = None
        conv = self.conversation
        if usage is not None:
            for name in TOKENS:
                setattr(conv, name, getattr(conv, name) + getattr(usage, name))
            if adds_to_totals(usage):
                add_cost(conv, cost)
        if ending is not None:
            conv.status, conv.error, conv.turn_token, self.ended = ending, error, None, ending

    def claim_later(self, content: str, title: str) -> tuple[uuid.UUID, Message]:
        """Claim a conversation nobody else can know yet (not stored), with its opening message: both are
        stored by the turn's first write (the answer, or the turn's end), one transaction fewer."""
        conv = self.conversation
        self.token = uuid.uuid4()
        conv.status, conv.error, conv.turn_token = RUNNING, "", self.token
        conv.title = conv.title or storable(title)[:200]
        self.unsaved = Message(conversation=conv, role=Message.Role.USER, content=storable(content))
        self.unsaved.has_none("tool_calls", "attachments")  # new: it has neither
        return self.token, self.unsaved

    def _insert(self, usage: Usage | None, cost: Cost | None, ending: str | None, error: str) -> None:
        """The first write of a conversation claimed by ``claim_later``: insert it as this write leaves it, then its
        opening message (again, if the database rolled an earlier try back). The object in memory is left as it
        was: ``write`` adds the same amounts to it once the transaction commits, as after an update."""
        conv, opening = self.conversation, self.unsaved
        assert opening is not None
        names = ("status", "error", "turn_token", "cost", "unpriced_replies", *TOKENS)
        before = {name: getattr(conv, name) for name in names}
        if usage is not None and adds_to_totals(usage):
            for name in TOKENS:
                setattr(conv, name, getattr(conv, name) + getattr(usage, name))
            add_cost(conv, cost)
        if ending is not None:
            conv.status, conv.error, conv.turn_token = ending, storable(error), None
        try:
            conv.save(force_insert=True, using=self.db)
        finally:
            for name, value in before.items():
                setattr(conv, name, value)
        opening.pk = None
        opening.save(force_insert=True, using=self.db)

    def count_usage(self, *, reserve: bool = False, status: str | None = None) -> None:
        """Add what the turn used since its last write to its usage counters, in the caller's transaction (a
        caller that tries it again puts back ``meter.pending`` first). ``reserve``: a new turn, refused
        (``UsageLimitExceeded`` naming the conversation's ``status`` before the claim, the caller's transaction
        rolled back) if a limit has no room for it."""
        assert self.meter is not None
        counts = self.meter.pending
        self.meter.count(counts, timezone.now(), reserve=reserve, status=status)
        self.meter.stored(counts)

    def end_counts(self) -> None:
        """After a failed write, once the turn's end is stored: the usage still pending, in a transaction of its
        own. If that fails too (the amount cannot be stored), it is logged, never retried by a turn's write."""
        if self.meter is None or not self.meter.pending:
            return
        try:
            with_retries(self.meter.flush, self.db)
        except (DatabaseError, OverflowError):
            logger.exception("the usage of a failed turn of conversation %s could not be counted: %s",
                             self.conversation.pk, self.meter.pending)  # fmt: skip

    def check_stop(self) -> bool:
        """Whether the owner asked this turn to stop, read now (one query); ``TurnInterrupted`` if the claim is gone."""
        if not self.stop_requested:
            found = list(self._held().order_by().values_list("stop_requested_at", flat=True)[:1])
            if not found:
                raise TurnInterrupted(status=self._status_now())
            self.stop_requested = found[0] is not None
        return self.stop_requested

    @retried
    def add_message(self, role: str, content: str, *, ending: str | None = None) -> Message:
        """Store a message; with ``ending``, the turn's end (that status) in the same transaction."""
        with self.write(ending=ending):
            return add_message(self.conversation, role, content)

    @retried
    def add_reply(
        self, reply: ModelReply, *, data: Any = None, ending: str | None = None
    ) -> tuple[Message, list[ToolCall]]:
        """Store a model answer and its requested calls, and add its tokens to the conversation's totals.

        ``data`` is the structured output parsed from the answer, when the turn asked for one. Call ids are
        made safe here: a missing, overlong or repeated id gets a new one, so each call pairs with one answer.
        The message is saved, then its calls together (``save_together``); a site's receivers hear of each.
        """
        usage = reply.usage
        cost = self.cost(reply)
        with self.write(usage=usage, cost=cost, ending=ending):
            message = Message(
                conversation=self.conversation,
                role=Message.Role.ASSISTANT,
                content=storable(reply.content or ""),
                data=storable_json(data),
                model=storable(reply.model)[:200],
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
                cached_tokens=usage.cached_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                provider_items=storable_json(reply.provider_items),
                cost=cost.amount,
                price=cost.price.as_json() if cost.price is not None else None,
                usage_unknown=not usage.known,
            )
            message.save()
            ids = unique_call_ids([call.id for call in reply.tool_calls], self._taken_call_ids(reply))
            calls = [
                ToolCall(
                    conversation=self.conversation,
                    message=message,
                    index=index,
                    call_id=call_id,
                    name=storable(requested.name)[:64],
                    raw_arguments=storable(requested.arguments),
                    status=ToolCall.Status.RUNNING,
                )
                for index, (requested, call_id) in enumerate(zip(reply.tool_calls, ids, strict=True))
            ]
            save_together(calls)  # none, for a final answer
        if self.call_ids is not None:
            self.call_ids.update(call.call_id for call in calls)
        message._prefetched_objects_cache = {"tool_calls": calls}  # type: ignore[attr-defined]
        return message, calls

    def _taken_call_ids(self, reply: ModelReply) -> list[str]:
        """Which of the reply's call ids the conversation already has (read where they are written)."""
        requested = [call.id for call in reply.tool_calls if call.id]
        if not requested:
            return []
        if self.call_ids is not None:
            return [call_id for call_id in requested if call_id in self.call_ids]
        taken = ToolCall.objects.using(router.db_for_write(ToolCall, instance=self.conversation)).filter(
            conversation_id=self.conversation.pk, call_id__in=requested
        )
        return list(taken.order_by().values_list("call_id", flat=True))

    def set_title_if_empty(self, title: str) -> None:
        """Name the conversation after its first message, unless someone named it meanwhile."""
        if not self.conversation.title:
            title = storable(title)[:200]
            Conversation.objects.using(self.db).filter(pk=self.conversation.pk, title="").update(title=title)
            self.conversation.title = title

    @retried
    def add_usage(self, reply: ModelReply) -> None:
        """Add the tokens of an answer that is not stored (and what it cost) to the conversation's totals."""
        with self.write(usage=reply.usage, cost=self.cost(reply), durable=False):
            pass

    def cost(self, reply: ModelReply) -> Cost:
        """What ``reply`` cost at the turn's prices: unknown (unpriced, never 0) when its usage is."""
        if self.pricing is None or not reply.usage.known:
            return UNPRICED
        return self.pricing.cost(reply.model, reply.usage)

    def count_reply(self, reply: ModelReply, request: ModelRequest) -> None:
        """Count what the answer to ``request`` used in the turn's meter (stored with the turn's next write): its
        tokens, calls and cost. An answer of unknown usage counts as unknown and unpriced, and as no tokens and
        no money (``UNKNOWN_USAGE = "stop"``: a token or cost limit then has no room left in its period) or as
        its estimated tokens and what they cost (``"estimate"``)."""
        if self.meter is None:
            return
        calls = len(reply.tool_calls)
        if reply.usage.known:
            self.meter.add(tokens=reply.usage.total_tokens, tool_calls=calls, cost=self.cost(reply).amount)
            return
        # "stop": nothing, and its token and cost limits have no room left (``Meter.check``).
        tokens: int = 0
        cost: Decimal | None = Decimal(0)
        if toolcalling_settings.UNKNOWN_USAGE == "estimate":
            guess = estimated_usage(reply, request)
            tokens = guess.total_tokens
            cost = self.pricing.cost(reply.model, guess).amount if self.pricing is not None else None
        self.meter.add(tokens=tokens, tool_calls=calls, cost=cost, unknown=True)

    @retried
    def wait_for_approval(self, call: ToolCall) -> None:
        """Store a validated call as ``awaiting_approval``."""
        call.requires_approval = True
        call.status = ToolCall.Status.AWAITING_APPROVAL
        with self.write():
            update_call_if(
                call, ToolCall.Status.RUNNING, arguments=storable_json(call.arguments),
                extras=storable_json(call.extras), requires_approval=True, approver=call.approver, status=call.status,
            )  # fmt: skip

    @retried
    def answer_call(
        self, call: ToolCall, *, status: str, result: str, error: str = "", waiting: bool = False, durable: bool = False
    ) -> Message:
        statuses = [*OPEN_CALL_STATUSES, ToolCall.Status.AWAITING_APPROVAL] if waiting else OPEN_CALL_STATUSES
        with self.write(durable=durable):
            message = answer_call_if(call, from_status=statuses, status=status, result=result, error=error)
            if message is None:
                raise TurnInterrupted(_("The call %(id)s was answered by someone else.") % {"id": call.call_id})
            return message

    @retried
    def close_open_calls(
        self, reason: str, *, started: Iterable[int] | None = (), waiting: bool = False
    ) -> list[Message]:
        with self.write(durable=False):  # the turn's end follows
            return close_open_calls(self.conversation, reason, started=started, waiting=waiting)

    @retried
    def release(self, counted: Counts, message: Message | None = None) -> bool:
        """Give back the claim of a turn that never ran (its task could not be queued): the conversation is
        ``idle`` again, ``message`` (the one its claim stored) deleted and ``counted`` (what its claim counted)
        taken back from the counters, together. False if the claim is gone."""
        with transaction.atomic(using=self.db):
            if not self._held().update(status=Conversation.Status.IDLE, turn_token=None, updated_at=timezone.now()):
                return False
            if message is not None:
                Message.objects.using(self.db).filter(pk=message.pk).delete()
            if self.meter is not None and counted:
                self.meter.count(Counts() - counted, timezone.now())  # every amount, the cost too
        self.conversation.status, self.conversation.turn_token, self.ended = Conversation.Status.IDLE, None, "idle"
        return True

    @retried
    def set_status(self, status: str, error: str = "") -> None:
        """Store how the turn ended; the claim ends with it. Nothing to do if a write already ended it so."""
        if self.ended == status and not error:
            return
        with self.write(ending=status, error=error):
            pass
        if self.failed:
            self.end_counts()

    def _status_now(self) -> str | None:
        statuses = Conversation.objects.using(self.db).filter(pk=self.conversation.pk).order_by()
        return next(iter(statuses.values_list("status", flat=True)[:1]), None)
