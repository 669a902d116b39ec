"""One call's path — limit → validate → gate → hooks → run → store its outcome — the same for a turn in a request,
the stepper, and a worker running an approved call (``CallHandler``). Each call ends in an ``Outcome`` that the
caller acts on; running a tool gives a ``ToolResult``."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from pydantic import BaseModel

from .. import storage
from ..conf import toolcalling_settings
from ..exceptions import InvalidArguments, ToolCallLimitExceeded, ToolExecutionError
from ..hooks import Hook, TurnView
from ..model_apis import HistoryMessage
from ..models import Message, ToolCall
from ..toolkit import Tool, assistants, result_to_text, split_extras, storable_json
from ._observers import Observers

if TYPE_CHECKING:
    from ..toolkit import ToolContext

logger = logging.getLogger("toolcalling")


class ToolResult(NamedTuple):
    """What running a tool gave: the call's status, the text the model reads, and the error (``""`` if none)."""

    status: str
    text: str
    error: str


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The outcome of one call: how it was dealt with."""

    message: Message | None
    """The tool message that answers the call, stored; ``None`` while the call waits for a decision."""
    text: str | None
    """What the model reads (the message's content); ``None`` while the call waits."""
    error: ToolExecutionError | None = None
    """With ``TOOL_ERRORS = "raise"``: the call failed, and the turn ends with this error once it has the message."""


class Limits:
    """``MAX_CALLS_PER_TOOL`` and ``MAX_TOTAL_TOOL_CALLS``, counting the calls of the current turn only."""

    def __init__(self) -> None:
        self.per_tool: Counter[str] = Counter()
        self.total = 0

    def count_current_turn(self, history: list[HistoryMessage]) -> None:
        """Count the calls the turn made before it waited for approval: those since the last user message."""
        for item in reversed(history):
            if item.role == "user":
                break
            if item.role == "assistant":
                for call in item.calls:
                    self.take(call.name)

    def take(self, name: str) -> str | None:
        """Count one call; the limit it goes over, described for the model, or ``None``."""
        self.per_tool[name] += 1
        self.total += 1
        s = toolcalling_settings
        if self.per_tool[name] > s.MAX_CALLS_PER_TOOL:
            return f"at most {s.MAX_CALLS_PER_TOOL} calls to {name!r} per turn"
        if self.total > s.MAX_TOTAL_TOOL_CALLS:
            return f"at most {s.MAX_TOTAL_TOOL_CALLS} tool calls per turn"
        return None


class CallHandler:
    """Runs the calls of one conversation's turn (or one approved call) with the tools offered to its user.

    Writes go through ``ledger`` (the turn's claim). Every method returns what it stored; the caller adds it
    to its history and then tells the observers (``answered``). With ``raise_errors`` (``TOOL_ERRORS =
    "raise"`` in a request) a failed call's answer carries the ``ToolExecutionError`` that ends the turn;
    otherwise the failure is the result the model reads.
    """

    def __init__(
        self,
        *,
        view: TurnView,
        tools: dict[str, Tool],
        observers: Observers,
        hooks: Iterable[Hook] = (),
        ledger: storage.Ledger,
        limits: Limits | None = None,
        extras: type[BaseModel] | None = None,
        extras_exempt: Iterable[str] = (),
        raise_errors: bool = False,
    ) -> None:
        self.view = view
        self.ctx: ToolContext = view.context
        self.tools = tools
        self.observers = observers
        self.hooks = list(hooks)
        self.ledger = ledger
        self.started: set[int] = set()  # calls whose tool began to run (they may have taken effect)
        self.limits = limits or Limits()
        self.extras = extras
        self.extras_exempt = set(extras_exempt)
        self.raise_errors = raise_errors

    def handle(self, call: ToolCall, *, durable: bool = False) -> Outcome:
        """Limit, validate, gate, run and answer one call. ``durable``: the result of a tool that ran is on disk
        before this returns (another call of the answer runs next that may not run twice: were the result lost
        with a database crash, a turn taken over would take the next call for one that never started, and run
        it again)."""
        over = self.limits.take(call.name)
        if over is not None:
            if toolcalling_settings.ON_LIMIT_EXCEEDED == "raise":
                raise ToolCallLimitExceeded(_("Tool call limit exceeded: %(limit)s.") % {"limit": over})
            limit = f"not run, the limit is {over}"
            return self._answer(call, ToolCall.Status.FAILED, f"Error: {limit}.", limit)
        tool = self.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return self._fail(call, f"Error: there is no tool named {call.name!r}. Available tools: {available}.")
        try:
            arguments = self._validate(tool, call)
        except InvalidArguments as exc:
            return self._fail(call, f"Error: invalid arguments for {tool.name}: {exc}. Fix them and call again.")
        self.ctx.tool_call = call
        try:
            gated = tool.needs_approval(self.ctx, call.arguments)
        except Exception as exc:
            logger.exception("approval rule of %s failed", tool.name)
            return self._fail(call, f"Error: {type(exc).__name__}: {exc}", cause=exc)
        if gated:
            call.approver = tool.approver  # stored with the wait: who decides is fixed when the call starts waiting
            self.ledger.wait_for_approval(call)
            self.observers.call_waiting(call)
            return Outcome(message=None, text=None)
        with self.observers.tool_span(call), self._together(tool):
            status, text, error = self._run(tool, call, arguments)
            if status == ToolCall.Status.FAILED:
                return self._fail(call, text, error, detail=f"Tool {tool.name!r} failed: {error}", durable=durable)
            return self._answer(call, status, text, error, durable=durable)

    def answer_decided(self, call: ToolCall, status: str, text: str) -> Outcome:
        """Store the outcome of a call its caller decided not to run (the stepper's ``skip`` and ``reject``); it
        still counts."""
        self.limits.take(call.name)
        return self._answer(call, status, text, "" if status == ToolCall.Status.SUCCEEDED else text)

    def mark_unknown(self, call: ToolCall, reason: str) -> Outcome | None:
        """A call whose tool may have run in a process that died, and may not run again (not ``idempotent``): it
        waits for a person to say what happened (``outcome_unknown``), with its arguments as the tool got them.
        A call that cannot have run (no such tool, invalid arguments) is answered as ``handle`` answers it."""
        tool = self.tools.get(call.name)
        try:
            if tool is None:
                raise InvalidArguments(call.name)
            self._validate(tool, call)
            self.ctx.tool_call = call
            gated = tool.needs_approval(self.ctx, call.arguments)
        except Exception:
            return self.handle(call)  # it failed before the tool could run, and fails the same way again
        if gated:
            return self.handle(call)  # a gated call runs only once decided: it cannot have run, and waits now
        call.status, call.error = ToolCall.Status.OUTCOME_UNKNOWN, reason
        with self.ledger.write():
            marked = storage.update_call_if(
                call, ToolCall.Status.RUNNING, status=call.status, error=reason,
                arguments=storable_json(call.arguments), extras=storable_json(call.extras),
            )  # fmt: skip
        if marked:
            self.observers.outcome_unknown(call)
        return None

    def withdraw(self, call: ToolCall, text: str) -> Message:
        """Store the outcome of a call that will not run because its turn was stopped (one awaiting approval
        included)."""
        return self.ledger.answer_call(call, status=ToolCall.Status.CANCELLED, result=text, error=text, waiting=True)

    def run_approved(self, call: ToolCall, *, note: str) -> Message | None:
        """Run a call a worker moved from ``approved`` to ``running``, and answer it if it is still ``running``.

        ``note`` goes before the result (e.g. that an approver changed the arguments). Returns the answer's
        message, or ``None`` when the call was answered (or settled) meanwhile: nothing is stored twice. A call the
        sweep left as ``outcome_unknown`` while it still ran takes its result: the outcome is known after all.
        """
        tool = self.tools.get(call.name)
        with self.observers.tool_span(call), self._together(tool) as together:
            status, text, error = self._run_approved(call)
            # A run the sweep took for dead (its lease ended) whose outcome nobody has settled yet: its own result
            # is what happened, and settles it.
            late = (ToolCall.Status.RUNNING, ToolCall.Status.OUTCOME_UNKNOWN)
            message = storage.answer_call_if(call, from_status=late, status=status, result=f"{note}{text}", error=error)
            if message is None and together is not None:
                transaction.set_rollback(True, using=self.ledger.db)  # what it wrote goes with the result
        if message is None:
            logger.warning("tool call %s was answered while it ran; its result is dropped: %s", call.pk, text)
            return None
        return message

    # The steps --------------------------------------------------------------------------------------

    def _together(self, tool: Tool | None) -> AbstractContextManager[Any]:
        """For an ``atomic`` tool, the transaction that holds its run and its result (both stored, or neither);
        for any other, nothing."""
        if tool is None or not tool.atomic:
            return nullcontext()
        return transaction.atomic(using=self.ledger.db)

    def _validate(self, tool: Tool, call: ToolCall) -> BaseModel:
        """Parse the model's arguments; extras are split off and handed to the assistant first."""
        raw: Any = call.raw_arguments
        extra_value = None
        if self.extras is not None and tool.name not in self.extras_exempt:
            raw, extra_value = split_extras(raw, self.extras)
        arguments = tool.parse_arguments(raw)
        call.arguments = arguments.model_dump(mode="json")
        if extra_value is not None:
            call.extras = extra_value.model_dump(mode="json")
            self.view.assistant.on_argument_extras(call, extra_value)
        return arguments

    def _run(self, tool: Tool, call: ToolCall, arguments: BaseModel) -> ToolResult:
        call.started_at = call.started_at or timezone.now()
        self.ctx.tool_call = call

        self.observers.tool_started(call)
        for hook in self.hooks:  # a hook may answer instead of the tool
            replaced = hook.before_tool_call(self.view, call, call.arguments)
            if replaced is not None:
                return ToolResult(ToolCall.Status.SUCCEEDED, replaced, "")
        self.started.add(call.pk)  # from here on the tool may take effect, whatever happens next
        status, text, error = run_tool(tool, self.ctx, arguments, using=self.ledger.db if tool.atomic else None)
        call.status, call.error = status, error
        for hook in reversed(self.hooks):  # the outcome is known; a hook may replace the text the model reads
            changed = hook.after_tool_call(self.view, call, text)
            if changed is not None:
                text = changed
        return ToolResult(status, text, error)

    def _run_approved(self, call: ToolCall) -> ToolResult:
        revoked = revoked_right(self.view.assistant, self.view.user, call.name)
        if revoked is not None:
            return ToolResult(ToolCall.Status.FAILED, f"Error: not run: {revoked}.", revoked)
        tool = self.tools.get(call.name)
        if tool is None:
            gone = f"the tool {call.name!r} is not available"
            return ToolResult(ToolCall.Status.FAILED, f"Error: {gone}.", gone)
        try:
            arguments = tool.parse_arguments(call.arguments)
        except InvalidArguments as exc:
            invalid = f"invalid arguments for {tool.name}: {exc}"
            return ToolResult(ToolCall.Status.FAILED, f"Error: {invalid}.", invalid)
        return self._run(tool, call, arguments)

    def _fail(
        self,
        call: ToolCall,
        text: str,
        error: str | None = None,
        *,
        detail: str = "",
        cause: Exception | None = None,
        durable: bool = False,
    ) -> Outcome:
        """Store a failed call's outcome; with ``raise_errors`` it ends the turn. The one place that decides it."""
        answer = self._answer(call, ToolCall.Status.FAILED, text, text if error is None else error, durable=durable)
        if not self.raise_errors:
            return answer
        failure = ToolExecutionError(detail or text.removeprefix("Error: "))
        failure.__cause__ = cause
        return Outcome(message=answer.message, text=text, error=failure)

    def _answer(self, call: ToolCall, status: str, text: str, error: str, *, durable: bool = False) -> Outcome:
        message = self.ledger.answer_call(call, status=status, result=text, error=error, durable=durable)
        return Outcome(message=message, text=text)


def run_tool(tool: Tool, ctx: ToolContext, arguments: BaseModel, *, using: str | None = None) -> ToolResult:
    """Call a tool function; return ``(status, text for the model, error)``. Never raises for tool errors.
    ``using``: the tool runs in a savepoint on that database, so what a failing tool wrote is undone."""
    try:
        if using is None:
            value = tool.invoke(ctx, arguments)
        else:
            with transaction.atomic(using=using):
                value = tool.invoke(ctx, arguments)
        return ToolResult(ToolCall.Status.SUCCEEDED, result_to_text(value), "")
    except Exception as exc:
        logger.warning("tool %s failed: %s: %s", tool.name, type(exc).__name__, exc)
        error = f"{type(exc).__name__}: {exc}"
        return ToolResult(ToolCall.Status.FAILED, f"Error: {error}", error)


def revoked_right(assistant: Any, user: Any, name: str) -> str | None:
    """Why an approved call may no longer run for ``user``: rights are checked again when it runs, since
    an approval can come hours after the request. ``None`` while the user still holds them."""
    if not user.is_active:  # every user model has it (AbstractBaseUser)
        return "the user's account is no longer active"
    if not assistant.has_permission(user):
        return f"the user may no longer use the assistant {assistant.id!r}"
    tool = next((t for t in assistant.resolve_tools() if t.name == name), None)
    if tool is not None and not tool.user_may_use(user):
        return f"the user no longer has the permissions this tool needs ({', '.join(tool.permissions)})"
    return None


def run_approved_call(call: ToolCall, *, note: str) -> bool:
    """Run one approved call (already ``running``) for the conversation's user, with the tools that assistant
    offers that user now. Tool errors go back to the model whatever ``TOOL_ERRORS`` says: no request waits."""
    conversation = call.conversation
    assistant = assistants.get(conversation.assistant_id)()
    user = conversation.user  # the requester, never the approver
    view = TurnView(assistant=assistant, conversation=conversation, user=user,
                    context=assistant.build_context(user, conversation))  # fmt: skip
    observers = Observers(view)
    tools = {t.name: t for t in assistant.get_tools(view.context)}
    ledger = storage.Ledger(conversation)  # no turn holds the conversation: the call's status guards its answer
    path = CallHandler(view=view, tools=tools, observers=observers, hooks=assistant.get_hooks(), ledger=ledger)
    message = path.run_approved(call, note=note)
    if message is None:
        return False
    observers.message_added(message)  # announced before the call's outcome, as in a turn
    observers.answered(call)
    return True
