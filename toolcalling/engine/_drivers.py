"""The drivers of a turn: everything that runs one consumes ``Turn.iter()`` (or, for a turn with no model to
ask, the turn's own steps), here together.

- A whole turn from code (``run_turn``: ``Assistant.run``), and from async code (``arun_turn`` and ``drive``:
  ``Assistant.arun``, and every streamed turn under ASGI). The async driver runs the same steps: only the wait
  for the model leaves them. The turn yields a ``ModelWait``, the driver awaits it on the event loop
  (``ModelAPI.asend``: the SDK's async client, streamed or not) and sends the reply back in, or throws the error
  in, where the turn handles it as any other model error; the steps (claims, writes, tool runs) each run in a
  thread of the loop's executor (``sync_to_async(thread_sensitive=False)``: no step keeps a transaction or a
  lock across a wait, so any thread may run the next, and a slow tool never queues other turns behind Django's
  one thread for sync code). So no thread is held while the model answers.
- One model answer at a time (``Stepper``: ``Assistant.steps``).
- The bodies of the tasks that run turns on a worker (``run_claimed_turn``, ``continue_turn``).
- A tool call a client asks for directly (an MCP client), with no model (``call_directly``).
- Stopping a turn from any process (``stop_turn``), and going on with a turn whose process died
  (``resume_stale_turn``).
"""

from __future__ import annotations

import datetime
import json
import logging
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.db import connections
from django.utils import timezone
from pydantic import BaseModel

from .. import storage
from ..attachments import sendable
from ..conf import toolcalling_settings
from ..exceptions import ConversationBusy, NotRegistered, NotRunning, TurnError, UsageLimitExceeded
from ..model_apis import ModelReply, RequestedCall
from ..models import Conversation, Message, ToolCall
from ..toolkit import assistants, storable
from ._observers import Listener
from ._turn import CallsHandled, Ending, ModelWait, Replied, Turn

if TYPE_CHECKING:
    from ..toolkit import AssistantLike

logger = logging.getLogger("toolcalling")

RUNNING = Conversation.Status.RUNNING
INTERRUPTED = "the process running this call stopped; whether it took effect is unknown"


# A whole turn -------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class TurnResult:
    """What a turn left behind: the conversation, the messages it added, and the parsed output if one was asked for."""

    conversation: Conversation
    messages: list[Message] = field(default_factory=list)
    output: BaseModel | None = None

    stopped: bool = False
    """Whether the owner stopped the turn before it finished."""

    @property
    def status(self) -> str:
        return self.conversation.status

    @property
    def reply(self) -> str:
        """The last plain assistant answer of the turn ("" while calls await approval)."""
        for message in reversed(self.messages):
            if message.role == Message.Role.ASSISTANT and not message.tool_calls.all():
                return message.content
        return ""

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for message in self.messages for call in message.tool_calls.all()]

    @property
    def awaiting_approval(self) -> list[ToolCall]:
        return [c for c in self.tool_calls if c.status == ToolCall.Status.AWAITING_APPROVAL]


def conversation_for(
    assistant: AssistantLike, user: Any, conversation: Conversation | None, *, save: bool = True
) -> Conversation:
    """The given conversation (checked to be this user's, with this assistant) or a new one; ``save=False``: a
    new one not stored yet, which the turn's claim inserts in its first transaction."""
    if not assistant.has_permission(user):
        raise PermissionDenied(f"{user!r} may not use the assistant {assistant.id!r}.")
    if conversation is None:
        new = Conversation(user=user, assistant_id=str(assistant.id), origin=Conversation.Origin.CODE)
        if save:
            new.save(force_insert=True)
        return new
    if conversation.user_id != user.pk:
        raise PermissionDenied(f"The conversation {conversation.pk} belongs to another user.")
    if conversation.assistant_id != assistant.id:
        raise ValueError(
            f"The conversation {conversation.pk} is with {conversation.assistant_id!r}, not {assistant.id!r}."
        )
    return conversation


def new_turn(
    assistant: AssistantLike,
    user: Any,
    conversation: Conversation | None,
    *,
    output_type: type[BaseModel] | None,
    listeners: list[Listener] | None,
    attachments: Sequence[Any],
) -> Turn:
    """The turn of a new message of ``user`` (in ``conversation``, checked to be theirs, or a new one).
    ``attachments``: the user's own unsent uploads (``Attachment`` rows or their ids) the message carries."""
    conversation = conversation_for(assistant, user, conversation, save=False)
    files = sendable(user, [getattr(a, "pk", a) for a in attachments]) if attachments else []
    return Turn(assistant, conversation, user=user, listeners=listeners, output_type=output_type, attachments=files)


def result_of(turn: Turn) -> TurnResult:
    return TurnResult(
        conversation=turn.conversation, messages=turn.new_messages, output=turn.output_value, stopped=turn.view.stopped
    )


def run_turn(
    assistant: AssistantLike,
    user: Any,
    content: str,
    conversation: Conversation | None = None,
    *,
    output_type: type[BaseModel] | None = None,
    listeners: list[Listener] | None = None,
    attachments: Sequence[Any] = (),
) -> TurnResult:
    """Run one whole turn; errors are raised as in the API (``TurnError``, ``ConversationBusy``)."""
    turn = new_turn(
        assistant, user, conversation, output_type=output_type, listeners=listeners, attachments=attachments
    )
    turn.run(content)
    return result_of(turn)


# From async code -----------------------------------------------------------------------------------------


def advance(steps: Generator[Any, Any, None], value: Any, error: BaseException | None) -> tuple[bool, Any]:
    """Run the turn to its next yield: ``(True, None)`` once it is over (a ``StopIteration`` cannot cross into a
    coroutine)."""
    drop_broken_connections()
    try:
        item = steps.throw(error) if error is not None else steps.send(value)
    except StopIteration:
        return True, None
    finally:
        return_pooled_connections()
    return False, item


def drop_broken_connections() -> None:
    """An executor thread keeps its database connections from one step to the next, of whichever turn, as a
    worker pool does (the loop's threads are few, and a connection per step cost the database more than the
    step); one an error left unusable (the database restarted, say) is closed, and the step connects again."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and connection.errors_occurred:
            if connection.is_usable():
                connection.errors_occurred = False
            else:
                connection.close()


def return_pooled_connections() -> None:
    """A connection of Django's connection pool (``OPTIONS["pool"]``) goes back to its pool after each step:
    the pool is sized for requests, and executor threads keeping one each would hold them all while their
    turns wait for the model (a pool of 4 and 30 turns at once: the fifth step waited for a connection until the
    pool's time-out, and its turn failed). A connection outside a pool stays with its thread, as above."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and not connection.in_atomic_block and pooled(connection):
            connection.close()


def pooled(connection: Any) -> bool:
    return getattr(connection, "pool", None) is not None  # PostgreSQL's backend has one when configured


async def drive(turn: Turn, content: str | None, *, claimed: bool = False) -> list[Message]:
    """Run ``turn`` to its end from async code; the messages it added (errors as ``Turn.run`` raises them)."""
    turn.waits = True
    steps = turn.iter(content, claimed=claimed)
    step = sync_to_async(advance, thread_sensitive=False)
    value: Any = None
    error: BaseException | None = None
    while True:
        done, item = await step(steps, value, error)
        if done:
            return turn.new_messages
        value, error = None, None
        if isinstance(item, ModelWait):
            try:
                value = await turn.client.asend(item.request, on_delta=item.on_delta)
            except BaseException as exc:  # a cancelled wait too: the turn fails, stored, and it is raised on
                error = exc


async def arun_turn(
    assistant: AssistantLike,
    user: Any,
    content: str,
    conversation: Conversation | None = None,
    *,
    output_type: type[BaseModel] | None = None,
    listeners: list[Listener] | None = None,
    attachments: Sequence[Any] = (),
) -> TurnResult:
    """``run_turn`` for async code: the same turn, with the wait for the model on the event loop."""
    turn = await sync_to_async(new_turn)(
        assistant, user, conversation, output_type=output_type, listeners=listeners, attachments=attachments
    )
    await drive(turn, content)
    return result_of(turn)


# One model answer at a time ------------------------------------------------------------------------------


class CallsStep:
    """One model answer with tool calls. Decide each call (``skip``, ``reject``; the rest run), then ``execute``."""

    def __init__(self, stepper: Stepper, replied: Replied) -> None:
        self.stepper = stepper
        self.replied = replied
        self.executed = False

    @property
    def message(self) -> Message:
        """The stored assistant message that asked for the calls."""
        return self.replied.message

    @property
    def calls(self) -> list[ToolCall]:
        return self.replied.calls

    def skip(self, call: ToolCall, result: str) -> None:
        """Do not run the tool; the model reads ``result`` as if the tool had returned it."""
        self.replied.decisions[self._own(call).pk] = (ToolCall.Status.SUCCEEDED, result)

    def reject(self, call: ToolCall, reason: str = "") -> None:
        """Do not run the tool; the model is told it was rejected (and why)."""
        text = f"Not run: the call was rejected{': ' + reason if reason else ''}."
        self.replied.decisions[self._own(call).pk] = (ToolCall.Status.REJECTED, text)

    def execute(self) -> None:
        """Answer every call: run the undecided ones (through validation, limits, approval and hooks)."""
        if self.executed:
            raise RuntimeError("This step was executed already.")
        self.executed = True
        self.replied.held = True  # the caller may have taken its time since the answer was stored
        self.stepper.run_calls()

    def _own(self, call: ToolCall) -> ToolCall:
        if call not in self.calls:
            raise ValueError(f"{call!r} is not one of this step's calls.")
        return call


class Stepper:
    """A turn driven by the caller: each ``next()`` asks the model until it requests calls (a ``CallsStep``) or is
    done.

    It consumes ``Turn.iter()`` and pauses it at each answer with calls, until the step is executed.
    """

    def __init__(
        self,
        assistant: AssistantLike,
        user: Any,
        content: str,
        conversation: Conversation | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        listeners: list[Listener] | None = None,
        attachments: Sequence[Any] = (),
    ) -> None:
        self.turn = new_turn(
            assistant, user, conversation, output_type=output_type, listeners=listeners, attachments=attachments
        )
        self.conversation = self.turn.conversation
        self.steps = self.turn.iter(content)
        self.started = False
        self.current: CallsStep | None = None

    def next(self) -> CallsStep | None:
        """The next answer that asks for calls; ``None`` when the turn is over (answered, waiting or failed)."""
        if self.current is not None and not self.current.executed:
            raise RuntimeError("Execute the previous step (step.execute()) before asking for the next one.")
        self.started = True
        self.current = None
        for step in self.steps:
            if isinstance(step, Replied) and step.calls:
                self.current = CallsStep(self, step)
                return self.current
        return None

    def run_calls(self) -> None:
        """Let the turn run the current step's calls; if they end the turn, its end is stored too."""
        outcome = next(self.steps)
        if isinstance(outcome, CallsHandled) and outcome.ending is not None:
            next(self.steps, None)

    def __iter__(self) -> Iterator[CallsStep]:
        while (step := self.next()) is not None:
            yield step

    def close(self, reason: str = "the turn was stopped by its caller.") -> None:
        """Stop a running turn: open calls are answered as cancelled and the conversation is marked failed."""
        if self.started and not self.turn.ended:
            try:
                self.steps.throw(TurnError(reason))
            except (TurnError, StopIteration):
                pass

    @property
    def result(self) -> TurnResult:
        return result_of(self.turn)


# The bodies of the tasks that run turns on a worker ---------------------------------------------------


def run_claimed_turn(conversation_id: str, content: str | None, token: str | None = None) -> None:
    """Run a turn whose user message was posted with ``"background": true``; the web request claimed it and
    passed its claim's ``token`` along (tasks queued before tokens existed use the conversation's). ``content``
    is ``None``: the claim stored the message (tasks queued before that carry it, and store it here)."""
    conversation = Conversation.objects.select_related("user").filter(pk=conversation_id).first()
    if conversation is None or conversation.status != Conversation.Status.RUNNING:
        logger.warning("background turn of %s not run: the conversation is gone or not running", conversation_id)
        return
    claim = uuid.UUID(token) if token else conversation.turn_token
    turn = Turn(assistants.get(conversation.assistant_id)(), conversation, stream=True, token=claim)
    if content is None and not turn.meter.limited:
        turn.meter.add(turns=1)  # the claim stored the message; its turn is counted with the turn's end here
    try:
        turn.run(content, claimed=True)
    except TurnError as exc:
        logger.info("background turn of %s failed: %s", conversation_id, exc)


def continue_turn(conversation_id: str) -> bool:
    """Send the decided calls' results to the model and store its answer (one continuation wins the claim)."""
    conversation = Conversation.objects.select_related("user").filter(pk=conversation_id).first()
    if conversation is None or conversation.status != Conversation.Status.AWAITING_APPROVAL:
        return False
    try:
        assistant = assistants.get(conversation.assistant_id)()
    except NotRegistered as exc:
        storage.set_status(conversation, Conversation.Status.FAILED, str(exc))
        return False
    turn = Turn(assistant, conversation)
    try:
        if conversation.origin == Conversation.Origin.MCP:
            close_direct(turn)
        else:
            turn.run(None)
    except ConversationBusy:
        return False  # another finishing call continued it already
    except TurnError as exc:
        # The turn stored the failure on the conversation; the user sees it on the next GET.
        logger.warning("conversation %s could not continue: %s", conversation_id, exc)
        return False
    return True


def close_direct(turn: Turn) -> None:
    """The direct calls of a client (an MCP client) are decided: the turn ends with no model asked about their
    results, as no model asked for them."""
    turn.claim(continuing=True)
    with turn.guard():
        turn.start(None)
        turn.end(Ending.IDLE)


# Direct calls, stop and recovery -------------------------------------------------------------------------


def call_directly(
    assistant: AssistantLike, user: Any, name: str, arguments: dict[str, Any] | None, *, origin: str, title: str = ""
) -> ToolCall | None:
    """Run (or queue for approval) one call of ``name`` for ``user`` in a new conversation; the stored call.

    The call's ``status`` says how it went: ``succeeded``, ``failed`` (its ``result`` says why) or
    ``awaiting_approval``. With ``TOOL_ERRORS = "raise"`` a failed call raises ``ToolExecutionError``
    after it is stored, as in a chat turn. ``None`` when a hook ended the turn (``EndTurn``) before the call.
    """
    if not assistant.has_permission(user):
        raise PermissionDenied(f"{user!r} may not use the assistant {assistant.id!r}.")
    conversation = Conversation.objects.create(
        user=user, assistant_id=str(assistant.id), origin=origin, title=storable(title)[:200]
    )
    asked = RequestedCall(id=f"call_{uuid.uuid4().hex}", name=name, arguments=json.dumps(arguments or {}))
    turn = Turn(assistant, conversation, user=user)
    try:
        turn.claim(direct_calls=1)
    except UsageLimitExceeded:  # refused at the claim: nothing of the call was stored, nor is its conversation
        conversation.delete()
        raise
    calls: list[ToolCall] = []
    with turn.guard():
        # The call goes through the turn's own steps, stored as a model's answer would be; once it is answered
        # (or waits for a decision) the turn is over, as no model waits for its result.
        turn.start(None)
        calls = turn.store(ModelReply(content="", tool_calls=[asked])).calls
        turn.end(turn.run_calls(calls).ending or Ending.IDLE)
    # No call when a hook ended the turn (``EndTurn``) before it was stored; its message is the last one.
    return calls[0] if calls else None


def request_stop(conversation: Conversation) -> bool:
    """Store a stop request for the running turn of ``conversation``; False when no turn is running."""
    now = timezone.now()
    return bool(Conversation.objects.filter(pk=conversation.pk, status=RUNNING).update(stop_requested_at=now))


def stop_turn(conversation: Conversation) -> None:
    """Ask the running turn of ``conversation`` to stop at its next step boundary, in whichever process runs it
    (``NotRunning`` when no turn runs). A turn that went quiet for ``STALE_TURN_TIMEOUT`` cannot hear it (its
    process died): it is taken over and ended here, its open calls answered as after any takeover."""
    if not request_stop(conversation):
        conversation.refresh_from_db(fields=["status"])
        raise NotRunning(status=conversation.status)
    conversation.refresh_from_db(fields=["status", "updated_at", "turn_token"])
    cutoff = timezone.now() - datetime.timedelta(seconds=toolcalling_settings.STALE_TURN_TIMEOUT)
    if conversation.status != RUNNING or conversation.updated_at >= cutoff:
        return
    try:
        assistant = assistants.get(conversation.assistant_id)()
    except NotRegistered:
        return  # nothing can run it; the next message takes it over as usual
    Turn(assistant, conversation).end_stale()


def resume_stale_turn(conversation: Conversation) -> bool:
    """Take over the turn of ``conversation`` if it went quiet for ``STALE_TURN_TIMEOUT`` (its process died) and
    go on from what is stored, with no model request repeated whose outcome was stored and no call run twice; False
    if it was not quiet (or another process took it over first).

    A turn stores the model's outcome with its calls (``running``, none started) before it runs them, one after
    another, each outcome stored as it comes. So of the calls still open when the process died, only the first may
    have started: it runs again if its tool may (``idempotent``, with the same ``ctx.idempotency_key``, or
    ``atomic``), and otherwise waits for a person to say what happened (``outcome_unknown``); the calls after it
    never started and run now. The turn then waits as a turn with gated calls does, and the approval machinery
    asks the model again once nothing is left to decide.

    Afterwards the conversation is ``awaiting_approval``: with calls to decide (gated ones, or ones whose
    outcome is unknown) it waits for them; with none, the caller continues it (``continue_when_decided``)."""
    assistant = assistants.get(conversation.assistant_id)()
    turn = Turn(assistant, conversation)
    token = storage.claim(conversation, from_statuses=[], stale_after=toolcalling_settings.STALE_TURN_TIMEOUT)
    if token is None:
        return False
    turn.ledger.token = token
    turn.continuing = True
    with turn.guard():
        turn.start(None)
        open_calls = ToolCall.objects.using(turn.ledger.db).filter(
            conversation_id=conversation.pk, status=ToolCall.Status.RUNNING, lease_expires_at=None
        )
        calls = list(open_calls.order_by("message_id", "index"))
        for position, call in enumerate(calls):
            tool = turn.tools.get(call.name)
            if position == 0 and not (tool is not None and tool.may_run_again):
                outcome = turn.calls.mark_unknown(call, INTERRUPTED)
            else:
                outcome = turn.calls.handle(call, durable=turn.result_waits_for_disk(calls, position))
            if outcome is not None and outcome.message is not None:
                turn.record_outcome(call, outcome.message)
            if outcome is not None and outcome.error is not None:
                raise outcome.error
        turn.end(Ending.AWAITING_APPROVAL)
    return True
