"""Running turns outside a request: a whole turn (``Assistant.run``), one model answer at a time
(``Assistant.steps``), and the bodies of the background and continuation tasks."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from pydantic import BaseModel

from ..attachments import sendable
from ..exceptions import ConversationBusy, NotRegistered, TurnError
from ..models import Conversation, Message, ToolCall
from ..toolkit import assistants
from . import _storage as storage
from ._observers import Listener
from ._steps import Answered, CallsAnswered
from ._turn import Turn

if TYPE_CHECKING:
    from ..toolkit import AssistantLike

logger = logging.getLogger("toolcalling")


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
    """Run one whole turn; errors are raised as in the API (``TurnError``, ``ConversationBusy``).
    ``attachments``: the user's own unsent uploads (``Attachment`` rows or their ids) the message carries."""
    conversation = conversation_for(assistant, user, conversation, save=False)
    files = sendable(user, [getattr(a, "pk", a) for a in attachments]) if attachments else []
    turn = Turn(assistant, conversation, user=user, listeners=listeners, output_type=output_type, attachments=files)
    messages = turn.run(content)
    return TurnResult(conversation=conversation, messages=messages, output=turn.output_value, stopped=turn.view.stopped)


class Step:
    """One model answer with tool calls. Decide each call (``skip``, ``reject``; the rest run), then ``execute``."""

    def __init__(self, stepper: Stepper, answered: Answered) -> None:
        self.stepper = stepper
        self.answered = answered
        self.executed = False

    @property
    def message(self) -> Message:
        """The stored assistant message that asked for the calls."""
        return self.answered.message

    @property
    def calls(self) -> list[ToolCall]:
        return self.answered.calls

    def skip(self, call: ToolCall, result: str) -> None:
        """Do not run the tool; the model reads ``result`` as if the tool had returned it."""
        self.answered.decisions[self._own(call).pk] = (ToolCall.Status.SUCCEEDED, result)

    def reject(self, call: ToolCall, reason: str = "") -> None:
        """Do not run the tool; the model is told it was rejected (and why)."""
        text = f"Not run: the call was rejected{': ' + reason if reason else ''}."
        self.answered.decisions[self._own(call).pk] = (ToolCall.Status.REJECTED, text)

    def execute(self) -> None:
        """Answer every call: run the undecided ones (through validation, limits, approval and hooks)."""
        if self.executed:
            raise RuntimeError("This step was executed already.")
        self.executed = True
        self.answered.held = True  # the caller may have taken its time since the answer was stored
        self.stepper.run_calls()

    def _own(self, call: ToolCall) -> ToolCall:
        if call not in self.calls:
            raise ValueError(f"{call!r} is not one of this step's calls.")
        return call


class Stepper:
    """A turn driven by the caller: each ``next()`` asks the model until it requests calls (a ``Step``) or is done.

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
    ) -> None:
        self.conversation = conversation_for(assistant, user, conversation, save=False)
        self.turn = Turn(assistant, self.conversation, user=user, output_type=output_type)
        self.steps = self.turn.iter(content)
        self.started = False
        self.current: Step | None = None

    def next(self) -> Step | None:
        """The next answer that asks for calls; ``None`` when the turn is over (answered, waiting or failed)."""
        if self.current is not None and not self.current.executed:
            raise RuntimeError("Execute the previous step (step.execute()) before asking for the next one.")
        self.started = True
        self.current = None
        for step in self.steps:
            if isinstance(step, Answered) and step.calls:
                self.current = Step(self, step)
                return self.current
        return None

    def run_calls(self) -> None:
        """Let the turn run the current step's calls; if they end the turn, its end is stored too."""
        outcome = next(self.steps)
        if isinstance(outcome, CallsAnswered) and outcome.ending is not None:
            next(self.steps, None)

    def __iter__(self) -> Iterator[Step]:
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
        return TurnResult(
            conversation=self.conversation,
            messages=self.turn.new_messages,
            output=self.turn.output_value,
            stopped=self.turn.view.stopped,
        )


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
    if content is None and not turn.meter.urgent:
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
    try:
        Turn(assistant, conversation).run(None)
    except ConversationBusy:
        return False  # another finishing call continued it already
    except TurnError as exc:
        # The turn stored the failure on the conversation; the user sees it on the next GET.
        logger.warning("conversation %s could not continue: %s", conversation_id, exc)
        return False
    return True
