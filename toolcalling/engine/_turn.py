"""The tool-calling loop: one user turn, from the stored history to the model's final answer.

``Turn.iter()`` is the only loop, and it reads top to bottom: ``claim`` the conversation, ``start`` (store
the user's message, load the history), then per model answer ``answer`` (ask the model, store its answer)
and ``run_calls``, until a step says how the turn ends; then ``end``. Each step returns a value (below) that
says what happened, and the loop yields it: the drivers (``_drivers``: ``run()`` and the stream, the stepper,
background turns, continuations) only consume them.

This module reads in that order: the values the steps return, the skeleton (``iter``), the claim (only one
turn runs per conversation at a time, and its usage limits are decided in the claim's transaction), the start,
asking the model and storing its answer, the calls, and how a turn ends (stored once with its status, or
failed, ended by a hook, or taken over after going quiet). Every way out of ``iter()`` passes through
``guard()``: a hook's ``EndTurn`` ends the turn with its message, an error fails it (every open call answered,
so the next message works), and a lost claim abandons it (nothing more may be written).

Two things outside the turn end it at a step boundary: its usage limits (checked before each model call; the
turn fails with ``UsageLimitExceeded``) and its owner's stop request (each fenced write reads it, so it is known
before the next model call or tool call; the loop then ends the turn ``stopped``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, router, transaction
from django.utils.translation import gettext as _
from pydantic import BaseModel

from .. import storage
from ..attachments import attach
from ..conf import toolcalling_settings
from ..exceptions import (
    ConversationBusy,
    ModelCallLimitExceeded,
    OutputValidationError,
    TurnError,
    TurnInterrupted,
    TurnNotStored,
)
from ..hooks import EndTurn, Hook, ModelRequest, TurnView
from ..model_apis import DeltaCallback, ModelAPI, ModelReply, SystemMessage, get_model_api
from ..models import Attachment, Conversation, Message, ToolCall
from ..toolkit import SEARCH_TOOL_NAME, Tool, ToolSearch, check_extras, search_enabled, with_extras
from ..usage import Counts, Meter, Pricing
from . import _memory as memory
from ._calls import CallHandler, Limits
from ._observers import Listener, Observers
from ._structured import OutputCheck

if TYPE_CHECKING:
    from ..toolkit import AssistantLike

logger = logging.getLogger("toolcalling")


class Ending(StrEnum):
    """How a turn ends: each but ``STOPPED`` is the conversation's status after it (a stopped turn leaves it idle)."""

    IDLE = Conversation.Status.IDLE.value
    """Answered (or ended by a hook): the conversation takes the next message."""
    AWAITING_APPROVAL = Conversation.Status.AWAITING_APPROVAL.value
    """Calls wait for a decision; the turn goes on once none is left."""
    FAILED = Conversation.Status.FAILED.value
    STOPPED = "stopped"
    """Its owner stopped it."""


STOPPED_REASON = "stopped by the user."


# What the steps return: plain values that say what happened and how the turn goes on. ``Turn.iter()`` yields
# an ``Replied`` per model answer, a ``CallsHandled`` after the calls of an answer that asked for some, and
# last one ``Ended``.


@dataclass(kw_only=True, eq=False)
class Replied:
    """The model answered (or a client asked for calls directly), and the answer is stored."""

    message: Message
    """The stored assistant message."""
    calls: list[ToolCall]
    """The calls it asks for; none for a final answer, which ends the turn."""
    decisions: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Calls (by id) the consumer decided itself before the turn goes on: ``(status, result)``, not run."""
    held: bool = False
    """Set by a consumer that held the step for a while: the stop request is read again before calls run."""


@dataclass(kw_only=True, eq=False)
class CallsHandled:
    """Every call of one answer was run and answered, or waits for a decision."""

    calls: list[ToolCall]
    ending: Ending | None
    """How the turn ends after them (``awaiting_approval``; ``idle`` when every call was return-direct;
    ``stopped``), or ``None``: the model is asked again."""


@dataclass(kw_only=True, eq=False)
class Ended:
    """The turn is over and its end is stored."""

    status: str
    """The conversation's status now."""
    stopped: bool
    """Whether its owner stopped it."""


Step = Replied | CallsHandled | Ended


@dataclass(kw_only=True, eq=False)
class ModelWait:
    """Yielded only to the async driver (``_drivers.drive``): send ``request`` to the model, then send the reply back
    into the turn (or throw the error into it). A sync turn sends it itself and never yields this."""

    request: ModelRequest
    on_delta: DeltaCallback | None


class Turn:
    """Runs one turn of a conversation: ask the model, run the calls it asks for, repeat until it answers.

    ``run(content)`` runs a turn for a new user message; ``run(None)`` continues a turn whose gated calls
    have all been decided. ``iter()`` yields each step's outcome to a consumer that must see them.
    """

    def __init__(
        self,
        assistant: AssistantLike,
        conversation: Conversation,
        *,
        user: Any = None,
        client: ModelAPI | None = None,
        listeners: list[Listener] | None = None,
        stream: bool = False,
        output_type: type[BaseModel] | None = None,
        token: uuid.UUID | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> None:
        self.assistant = assistant
        self.attachments = attachments  # the uploads the new user message carries
        self.conversation = conversation
        self.client = client or get_model_api(assistant)
        user = user if user is not None else conversation.user
        self.view = TurnView(assistant=assistant, conversation=conversation, user=user,
                             context=assistant.build_context(user, conversation), stream=stream)  # fmt: skip
        self.hooks: list[Hook] = assistant.get_hooks()
        self.meter = Meter.build(assistant, self.view.context)  # usage limits across turns, counted by the ledger
        self.pricing = Pricing(assistant.get_model(), assistant.get_price_provider())  # what its answers cost
        # token: a claim made elsewhere
        self.ledger = storage.Ledger(conversation, token, meter=self.meter, pricing=self.pricing)
        # Not stored yet (``Assistant.run`` without a conversation): the claim inserts it, and its history is
        # what this turn stores, so neither the history nor its call ids are read back.
        self.creating = conversation._state.adding
        if self.creating:
            self.ledger.call_ids = set()
        self.opening: Message | None = None  # the user's message, announced once the first write stored it
        self.claimed_message: Message | None = None  # the user's message ``claim`` stored, which ``release`` takes back
        self.observers = Observers(self.view, listeners or [])
        self.tools: dict[str, Tool] = {t.name: t for t in assistant.get_tools(self.view.context)}
        if assistant.argument_extras is not None:
            check_extras(assistant.argument_extras, self.tools.values(), type(assistant).__qualname__)
        self.search: ToolSearch | None = None
        if search_enabled(assistant, len(self.tools)):
            self.search = ToolSearch(self.tools, conversation, max_results=assistant.tool_search_results)
            self.tools[SEARCH_TOOL_NAME] = self.search.tool
        spec = assistant.get_output_spec(output_type)
        self.output = OutputCheck(spec) if spec is not None else None
        self.limits = Limits()
        self.calls = CallHandler(
            view=self.view,
            tools=self.tools,
            observers=self.observers,
            hooks=self.hooks,
            ledger=self.ledger,
            limits=self.limits,
            extras=assistant.argument_extras,
            extras_exempt=[SEARCH_TOOL_NAME],
            raise_errors=toolcalling_settings.TOOL_ERRORS == "raise",
        )
        self.history = memory.History()
        # A stored conversation's turn reads its history as it starts, the user's new message with it: what is
        # recorded before that is not added to the history it replaces (nor its files read twice).
        self.history_read = self.creating
        self.continuing = False
        self.turn_counted = False  # the new message's turn is in ``meter.pending`` or stored (see ``claim``)
        self.ended = False
        self.waits = False  # driven by ``arun``: the model is asked by yielding ``ModelWait`` to it

    @property
    def new_messages(self) -> list[Message]:
        """The messages this turn stored, in order."""
        return self.view.messages

    @property
    def output_value(self) -> BaseModel | None:
        """The parsed final answer, when the turn asked for an output type."""
        return self.output.value if self.output is not None else None

    # The turn, top to bottom --------------------------------------------------------------------------

    def run(self, content: str | None = None, *, claimed: bool = False) -> list[Message]:
        """Run the turn to its end and return the messages it added (see ``iter``)."""
        for _step in self.iter(content, claimed=claimed):
            pass
        return self.new_messages

    def iter(self, content: str | None = None, *, claimed: bool = False) -> Generator[Step, Any, None]:
        """Run the turn, yielding each step's outcome; the last is ``Ended``. ``content=None`` continues a
        turn whose gated calls have all been decided.

        ``claimed=True``: the caller already called ``claim()`` (to answer "busy" before handing the turn to a
        thread or a worker).
        """
        if not claimed:
            self.claim(continuing=content is None, content=content)
            content = None  # stored with the claim, in one transaction
        with self.guard():
            self.start(content)
            ending: Ending | None = None
            while ending is None:
                answered = yield from self.get_reply()
                if answered is None:  # the owner's stop request, read by the last write
                    ending = Ending.STOPPED
                    break
                yield answered
                if not answered.calls:
                    ending = Ending.IDLE
                    break
                if answered.held:
                    self.ledger.check_stop()  # the consumer may have taken its time since the answer was stored
                outcome = self.run_calls(answered.calls, answered.decisions)
                yield outcome
                ending = outcome.ending
            self.end(ending)
        yield Ended(status=self.conversation.status, stopped=self.view.stopped)

    # The claim ---------------------------------------------------------------------------------------

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
            storage.with_retries(self.meter.prepare, self.meter.database)  # a deadlock of new rows
            self.meter.add(tool_calls=direct_calls)  # counted here when limits apply, else with the turn's end
        elif reserve:
            self.meter.check(new_turn=True, status=self.conversation.status)  # the common refusal: no write at all
            storage.with_retries(self.meter.prepare, self.meter.database)  # a deadlock of new rows
            self.meter.add(turns=1)  # counted here when limits apply, else with the turn's end
            self.turn_counted = True
        title = " ".join(content.split())[:80] if content is not None else None
        if self.creating and content is not None and not self.attachments and not (reserve and self.meter.limited):
            # Nobody can know the conversation before it is stored, nor need refusing: the first write stores it
            # (a message with files is stored here: its uploads are given to it in the same transaction).
            token, self.opening = self.ledger.claim_later(content, title or "")
            self.history.extend(storage.as_history([self.opening]))
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
                if reserve and self.meter.limited:  # the turn, and the message with it, only if a limit has room
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
            Counts(turns=1) if self.turn_counted and self.meter.limited and not self.meter.pending.turns else Counts()
        )
        return self.ledger.release(counted, self.claimed_message)

    def _claim(self, continuing: bool, title: str | None = None) -> uuid.UUID:
        conv = self.conversation
        if self.creating:  # a try again after a rollback inserts it again
            self.ledger.token = storage.claim_new(conv, title=title or "")
            return self.ledger.token
        if continuing:
            self.ledger.token = storage.claim(conv, from_statuses=[Conversation.Status.AWAITING_APPROVAL])
            if self.ledger.token is None:
                raise ConversationBusy(_("The conversation is not waiting to continue."), status=conv.status)
            return self.ledger.token
        token = self.ledger.token = storage.claim(
            conv, from_statuses=[Conversation.Status.IDLE, Conversation.Status.FAILED], title=title
        )
        if token is not None:
            return token
        if self.take_over():
            assert self.ledger.token is not None
            if title is not None:
                self.ledger.set_title_if_empty(title)
            return self.ledger.token
        conv.refresh_from_db(fields=["status"])
        if conv.status == Conversation.Status.AWAITING_APPROVAL:
            yours = conv.tool_calls.filter(status=ToolCall.Status.AWAITING_APPROVAL).exclude(approver="staff").exists()
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

    # Start, ask and store, the calls -----------------------------------------------------------------

    def start(self, content: str | None) -> None:
        """Store the user's message (unless the claim did) and load the history the model will see."""
        if content is not None:
            if not self.turn_counted and not self.meter.limited:  # else the claim counted it (see ``claim``)
                self.meter.add(turns=1)  # stored with the turn's end
            message = self.ledger.add_message(Message.Role.USER, content)
            attach(message, self.attachments)
            self.record(message)
            self.ledger.set_title_if_empty(" ".join(content.split())[:80])
        self.observers.turn_started()
        for hook in self.hooks:
            hook.on_turn_start(self.view)
        if not self.creating:  # else the history is the message the claim stored, recorded already
            self.history = memory.load(self.assistant, self.conversation)
            self.history_read = True
            whole = self.assistant.memory == "full" and self.assistant.history_max_messages is None
            # A history that holds every call, read where the turn writes (not from a replica that may lag),
            # knows the call ids already taken: no query for them.
            here = router.db_for_read(Message, instance=self.conversation) == self.ledger.db
            if whole and self.assistant.history_max_tokens is None and here:
                items = self.history.items
                self.ledger.call_ids = {call.id for item in items if item.role == "assistant"
                                        for call in item.calls}  # fmt: skip
        self.limits.count_current_turn(self.history.items)

    def get_reply(self) -> Generator[Any, Any, Replied | None]:
        """Ask until the model gives an answer the turn can use, and store it; ``None`` when the owner asked
        the turn to stop (as the turn's last write found), so the model is not asked (again).

        With an output type, a final answer that does not validate is sent back to the model (nothing of it is
        stored) until the assistant's ``output_retries`` are used up; then it is stored and the turn fails.
        """
        while not self.ledger.stop_requested:
            reply = yield from self.ask()
            if self.output is None or reply.tool_calls:
                return self.store(reply)
            verdict = self.output.check(reply)
            if verdict.retry:
                self.send_back(reply, verdict.problem)
                continue
            if verdict.value is None:
                self.record(self.ledger.add_reply(reply)[0])
                raise OutputValidationError(verdict.problem)
            return self.store(reply, data=verdict.value.model_dump(mode="json"))
        return None

    def store(self, reply: ModelReply, *, data: Any = None) -> Replied:
        """Store an answer with its calls; a final answer and the turn's end in one transaction."""
        message, calls = self.ledger.add_reply(reply, data=data, ending=None if reply.tool_calls else Ending.IDLE)
        self.record(message)
        return Replied(message=message, calls=calls)

    def ask(self) -> Generator[Any, Any, ModelReply]:
        """Send the history and the offered tools to the model once, if the turn's limits leave room for it.

        ``before_model_call`` hooks may change the request; ``after_model_call`` hooks see the reply."""
        if self.view.model_calls >= toolcalling_settings.MAX_MODEL_CALLS:
            raise ModelCallLimitExceeded(
                _("The model was asked %(count)d times in one turn without a final answer; stopped.")
                % {"count": self.view.model_calls}
            )
        self.meter.check(new_turn=False)
        request = self.request()
        for hook in self.hooks:
            hook.before_model_call(self.view, request)
        with self.observers.model_call(request) as observe:
            on_delta = self.observers.streamed() if self.view.stream else None
            if self.waits:  # the async driver sends it, and sends the reply back
                reply = yield ModelWait(request=request, on_delta=on_delta)
            else:
                reply = self.client.send(request, on_delta=on_delta)
            # What it used counts whatever comes next, and is stored with the next write.
            self.ledger.count_reply(reply, request)
            observe(reply)
        self.view.model_calls += 1
        for hook in reversed(self.hooks):
            hook.after_model_call(self.view, reply)
        return reply

    def run_calls(self, calls: list[ToolCall], decided: dict[int, tuple[str, str]] | None = None) -> CallsHandled:
        """Run (or queue for approval) each call of one answer in the order given.

        ``decided`` maps call ids to a ``(status, result)`` already chosen by the consumer (a stepper that
        skipped or rejected them); those calls are answered with it and not run.
        """
        direct: list[str] = []
        for position, call in enumerate(calls):
            # The write that stored the answer, or the last call's result, just now read any stop request.
            if self.ledger.stop_requested:
                return CallsHandled(calls=calls, ending=self.stop_calls(calls))
            if decided and call.pk in decided:
                answer = self.calls.answer_decided(call, *decided[call.pk])
            else:
                answer = self.calls.handle(call, durable=self.result_waits_for_disk(calls, position))
            if answer.message is not None:
                self.record_outcome(call, answer.message)
            if answer.error is not None:
                raise answer.error
            tool = self.tools.get(call.name)
            if tool is not None and tool.return_direct and call.status == ToolCall.Status.SUCCEEDED:
                direct.append(answer.text or "")
        if any(c.status == ToolCall.Status.AWAITING_APPROVAL for c in calls):
            self.observers.awaiting_approval([c for c in calls if c.requires_approval])
            return CallsHandled(calls=calls, ending=Ending.AWAITING_APPROVAL)
        if len(direct) == len(calls):  # the results are the reply
            self.record(self.ledger.add_message(Message.Role.ASSISTANT, "\n\n".join(direct), ending=Ending.IDLE))
            return CallsHandled(calls=calls, ending=Ending.IDLE)
        return CallsHandled(calls=calls, ending=None)

    def result_waits_for_disk(self, calls: Sequence[ToolCall], position: int) -> bool:
        """Whether the result of ``calls[position]`` must be on disk before the next call of the answer runs: were
        it lost with a database crash, a turn taken over would take that call for one that never started and run
        it again (``CallHandler.handle``). Not when none follows, nor when the next may run again (``idempotent``,
        with the same ``ctx.idempotency_key``, or ``atomic``, whose writes would be lost with that result) or
        names no tool (it is only answered)."""
        if position + 1 >= len(calls):
            return False
        tool = self.tools.get(calls[position + 1].name)
        return tool is not None and not tool.may_run_again

    def stop_calls(self, calls: list[ToolCall]) -> Ending:
        """The owner stopped the turn: this answer's calls not run (or waiting) are answered "stopped by the user"."""
        for call in calls:
            unanswered = call.status in (ToolCall.Status.RUNNING, ToolCall.Status.AWAITING_APPROVAL)
            if unanswered and call.pk not in self.calls.started:
                self.record_outcome(call, self.calls.withdraw(call, f"Not run: {STOPPED_REASON}"))
        return Ending.STOPPED

    # How the turn ends -------------------------------------------------------------------------------

    def end(self, ending: Ending, error: str = "") -> None:
        """Store how the turn ended and tell everyone; once. A ``stopped`` turn leaves the conversation ``idle``."""
        if self.ended:
            return
        self.ended = True
        if ending == Ending.STOPPED:
            self.view.stopped = True
            for message in self.ledger.close_open_calls(STOPPED_REASON, started=self.calls.started, waiting=True):
                self.record(message)
            ending = Ending.IDLE
        self.ledger.set_status(ending.value, error)
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
        self.end(Ending.FAILED, error)

    def end_early(self, message: str) -> None:
        """A hook raised ``EndTurn``: answer any open call, then its message is the reply."""
        reason = "the turn was ended before this call was answered."
        for closed in self.ledger.close_open_calls(reason, started=self.calls.started):
            self.record(closed)
        self.record(self.ledger.add_message(Message.Role.ASSISTANT, message))
        self.end(Ending.IDLE)

    def end_stale(self) -> bool:
        """End a turn whose process went quiet for ``STALE_TURN_TIMEOUT`` (it cannot hear a stop request) as
        stopped: it is taken over, its open calls answered as after any takeover. False if it was not quiet."""
        if not self.take_over():
            return False
        with self.guard():
            self.end(Ending.STOPPED)
        return True

    # Parts of the steps -------------------------------------------------------------------------------

    def request(self) -> ModelRequest:
        """The next request: instructions, the history under the memory policy, and the offered tools."""
        instructions = self.assistant.get_instructions(self.view.context)
        options = dict(self.assistant.model_options)
        if self.output is not None:
            instructions = f"{instructions}\n\n{self.output.spec.instructions()}"
            options["response_format"] = self.output.spec.response_format()
        budget = self.assistant.history_max_messages, self.assistant.history_max_tokens
        return ModelRequest(
            model=self.assistant.get_model(),
            messages=[SystemMessage(instructions), *self.history.trimmed(*budget)],
            tools=self.offered_tools(),
            options=options,
        )

    def offered_tools(self) -> list[dict[str, Any]]:
        """The tool definitions for the next request: all tools, or the search tool and what it has found."""
        tools = self.search.offered(self.tools) if self.search else list(self.tools.values())
        return tool_definitions(self.assistant, tools)

    def send_back(self, reply: ModelReply, problem: str) -> None:
        """An invalid structured answer: its tokens count, it and the correction go to the next request only."""
        assert self.output is not None
        self.ledger.add_usage(reply)
        self.history += self.output.correction(reply, problem)
        self.observers.output_retry(self.output.retries_used, problem)

    def record(self, message: Message) -> None:
        """A message this turn stored: it joins the history sent next, and everyone hears of it."""
        self.announce_opening()
        if self.history_read:
            self.history.extend(storage.as_history([message]))
        self.observers.message_added(message)

    def announce_opening(self) -> None:
        """The user's message of a conversation the turn's first write stored (``claim_later``), heard of
        once it is stored; it is in the history already."""
        if self.opening is not None and self.opening.pk is not None:
            opening, self.opening = self.opening, None
            self.observers.message_added(opening)

    def record_outcome(self, call: ToolCall, message: Message) -> None:
        """A call's answer is stored: its message is announced first, then the call's outcome."""
        self.record(message)
        self.observers.answered(call)


def tool_definitions(assistant: AssistantLike, tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The definitions of ``tools`` as the model gets them: with the assistant's argument extras (not on the
    search tool). The MCP endpoint lists its tools with these same schemas."""
    definitions = [t.definition() for t in tools]
    extra_fields = assistant.argument_extras
    if extra_fields is not None:
        definitions = [
            d if d["function"]["name"] == SEARCH_TOOL_NAME else with_extras(d, extra_fields) for d in definitions
        ]
    return definitions
