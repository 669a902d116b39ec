"""The tool-calling loop: one user turn, from the stored history to the model's final answer.

A turn reads top to bottom: ``claim`` the conversation → ``start`` (store the user's message, load the
history) → ``step`` until one says how the turn ends (``ask`` the model, store its ``answer``,
``run_calls``) → ``end``. Each step returns what happens next; nothing watches a stored status.

Two things outside the turn can end it at a step boundary: its usage limits (checked before each model call;
the turn fails with ``UsageLimitExceeded``) and its owner's stop request (reported by each write, so known
before the next model call or tool call; the step says the turn is ``stopped``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils.translation import gettext as _
from pydantic import BaseModel

from ..conf import toolcalling_settings
from ..exceptions import (
    ConversationBusy,
    ModelCallLimitExceeded,
    OutputValidationError,
    TurnError,
    TurnInterrupted,
)
from ..hooks import EndTurn, ModelRequest, TurnView
from ..models import Conversation, Message, ToolCall
from ..toolkit import SEARCH_TOOL_NAME, Tool, ToolSearch, check_extras, search_enabled, with_extras
from ..usage import Meter
from . import _memory as memory
from . import _storage as storage
from ._calls import CallPath, Limits
from ._client import ModelClient, get_client
from ._observers import Listener, Observers
from ._replies import ModelReply
from ._structured import OutputCheck

if TYPE_CHECKING:
    from ..assistant import Assistant

IDLE = Conversation.Status.IDLE
AWAITING_APPROVAL = Conversation.Status.AWAITING_APPROVAL
FAILED = Conversation.Status.FAILED
STOPPED = "stopped"  # how a turn ends when its owner stopped it: the conversation is idle again
STOPPED_REASON = "stopped by the user."


class Turn:
    """Runs one turn of a conversation: ask the model, run the calls it asks for, repeat until it answers.

    ``run(content)`` runs a turn for a new user message; ``run(None)`` continues a turn whose gated
    calls have all been decided. The steps are public so code that must own each iteration can drive
    them itself (``Stepper`` does).
    """

    def __init__(
        self,
        assistant: Assistant,
        conversation: Conversation,
        *,
        user: Any = None,
        client: ModelClient | None = None,
        listeners: list[Listener] | None = None,
        stream: bool = False,
        output_type: type[BaseModel] | None = None,
        token: uuid.UUID | None = None,
    ) -> None:
        self.assistant = assistant
        self.conversation = conversation
        self.client = client or get_client()
        user = user if user is not None else conversation.user
        self.view = TurnView(assistant=assistant, conversation=conversation, user=user,
                             context=assistant.build_context(user, conversation), stream=stream)  # fmt: skip
        self.meter = Meter.build(assistant, self.view.context)  # usage limits across turns, counted by the ledger
        self.ledger = storage.Ledger(conversation, token, meter=self.meter)  # token: a claim made elsewhere
        self.observers = Observers(self.view, assistant.get_hooks(), listeners or [])
        self.tools: dict[str, Tool] = {t.name: t for t in assistant.get_tools(self.view.context)}
        check_extras(assistant.argument_extras, self.tools.values(), type(assistant).__qualname__)
        self.search: ToolSearch | None = None
        if search_enabled(assistant, len(self.tools)):
            self.search = ToolSearch(self.tools, conversation, max_results=assistant.tool_search_results)
            self.tools[SEARCH_TOOL_NAME] = self.search.tool
        spec = assistant.get_output_spec(output_type)
        self.output = OutputCheck(spec) if spec is not None else None
        self.limits = Limits()
        self.calls = CallPath(
            view=self.view,
            tools=self.tools,
            observers=self.observers,
            ledger=self.ledger,
            record=self.record,
            limits=self.limits,
            extras=assistant.argument_extras,
            extras_exempt=[SEARCH_TOOL_NAME],
            raise_errors=toolcalling_settings.TOOL_ERRORS == "raise",
        )
        self.history = memory.History()
        self.continuing = False
        self.asked_by_client = False
        self.ended = False

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
        """Run the turn to its end and return the messages it added.

        ``claimed=True``: the caller already called ``claim()`` (to answer "busy" before handing the
        turn to a thread or a worker).
        """
        if not claimed:
            self.claim(continuing=content is None, content=content)
            content = None  # stored with the claim, in one transaction
        with self.guard():
            self.start(content)
            # Calls a client asked for directly (an MCP client) are over once decided: no model asked for them.
            ending = IDLE if content is None and self.asked_by_client else None
            while ending is None:
                ending = self.step()
            self.end(ending)
        return self.new_messages

    def claim(self, *, continuing: bool = False, content: str | None = None, metered: bool = True) -> uuid.UUID:
        """Mark the conversation ``running`` and hold its claim; only one turn runs per conversation at a time.

        ``content``, the user's message, is stored in the same transaction as the claim. A new message over a
        usage limit is refused first, before anything is stored (``metered=False``: a client's direct tool
        call, which no limit counts)."""
        self.continuing = continuing
        if metered and not continuing:
            self.meter.check(new_turn=True, status=self.conversation.status)
        with transaction.atomic(using=self.ledger.db):
            storage.relax_durability(self.ledger.db)  # the turn's first durable write (answer with calls, end) takes it
            token = self._claim(continuing)
            if content is not None:  # the claim just made is the fence of this write
                opening = storage.add_message(self.conversation, Message.Role.USER, content)
                self.ledger.set_title_if_empty(" ".join(content.split())[:80])
                self.meter.add(turns=1)
                if self.meter.urgent:  # the message and its count are stored together
                    self.ledger.count_usage()
        if content is not None:
            self.record(opening)
        return token

    def _claim(self, continuing: bool) -> uuid.UUID:
        conv = self.conversation
        if continuing:
            self.ledger.token = storage.claim(conv, from_statuses=[AWAITING_APPROVAL])
            if self.ledger.token is None:
                raise ConversationBusy(_("The conversation is not waiting to continue."), status=conv.status)
            return self.ledger.token
        self.ledger.token = storage.claim(conv, from_statuses=[IDLE, FAILED])
        if self.ledger.token is not None or self.take_over():
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

    def start(self, content: str | None) -> None:
        """Store the user's message (unless the claim did) and load the history the model will see."""
        conv = self.conversation
        if content is not None:
            self.meter.add(turns=1)  # stored with the message
            self.record(self.ledger.add_message(Message.Role.USER, content))
            self.ledger.set_title_if_empty(" ".join(content.split())[:80])
        self.observers.turn_started()
        self.history = memory.load(self.assistant, conv)
        self.limits.count_current_turn(self.history.items)
        self.asked_by_client = self.continuing and storage.asked_by_client(conv)

    def step(self) -> str | None:
        """Ask the model once and act on its answer: the status the turn ends with, or ``None`` to go on."""
        calls = self.answer()
        if calls is None:
            return STOPPED
        return self.run_calls(calls) if calls else IDLE

    def answer(self) -> list[ToolCall] | None:
        """Ask until the model gives an answer the turn can use; store it and return the calls it asks for.

        With an output type, a final answer that does not validate is sent back to the model (nothing of
        it is stored) until the assistant's ``output_retries`` are used up; then it is stored and the turn fails.
        ``None``: the owner asked the turn to stop, so the model is not asked (again).
        """
        while True:
            # The turn's last write (the user's message, the previous answer's results) reported any stop request.
            if self.ledger.stopping:
                return None
            reply = self.ask()
            data = None
            if self.output is not None and not reply.tool_calls:
                verdict = self.output.check(reply)
                if verdict.retry:
                    self.send_back(reply, verdict.problem)
                    continue
                if verdict.value is None:
                    self.record(self.ledger.add_reply(reply)[0])
                    raise OutputValidationError(verdict.problem)
                data = verdict.value.model_dump(mode="json")
            # A final answer and the turn's end are stored in one transaction.
            message, calls = self.ledger.add_reply(reply, data=data, ending=None if reply.tool_calls else IDLE)
            self.record(message)
            return calls

    def ask(self) -> ModelReply:
        """Send the history and the offered tools to the model once, if the turn's limits leave room for it."""
        if self.view.model_calls >= toolcalling_settings.MAX_MODEL_CALLS:
            raise ModelCallLimitExceeded(
                _("The model was asked %(count)d times in one turn without a final answer; stopped.")
                % {"count": self.view.model_calls}
            )
        self.meter.check(new_turn=False)
        return self.observers.model_call(self.request(), self.send)

    def run_calls(self, calls: list[ToolCall], decided: dict[int, tuple[str, str]] | None = None) -> str | None:
        """Run (or queue for approval) each call of one answer in the order given; how the turn goes on.

        ``decided`` maps call ids to a ``(status, result)`` already chosen by the caller (a stepper that
        skipped or rejected them); those calls are answered with it and not run. Returns
        ``awaiting_approval`` when a call waits, ``idle`` when every call was return-direct (their results
        are the reply), ``stopped`` when the owner stopped the turn before a call started, ``None`` when the
        model is asked again.
        """
        direct: list[str] = []
        for call in calls:
            # The write that stored the answer, or the last call's result, just now reported any stop request.
            if self.ledger.stopping:
                return self.stop_calls(calls)
            if decided and call.pk in decided:
                result = self.calls.answer_decided(call, *decided[call.pk])
            else:
                result = self.calls.handle(call)
            tool = self.tools.get(call.name)
            if tool is not None and tool.return_direct and call.status == ToolCall.Status.SUCCEEDED:
                direct.append(result or "")
        if any(c.status == ToolCall.Status.AWAITING_APPROVAL for c in calls):
            self.observers.awaiting_approval([c for c in calls if c.requires_approval])
            return AWAITING_APPROVAL
        if len(direct) == len(calls):
            self.record(self.ledger.add_message(Message.Role.ASSISTANT, "\n\n".join(direct), ending=IDLE))
            return IDLE
        return None

    def stop_calls(self, calls: list[ToolCall]) -> str:
        """The owner stopped the turn: this answer's calls not run (or waiting) are answered "stopped by the user"."""
        for call in calls:
            unanswered = call.status in (ToolCall.Status.RUNNING, ToolCall.Status.AWAITING_APPROVAL)
            if unanswered and call.pk not in self.calls.started:
                self.calls.withdraw(call, f"Not run: {STOPPED_REASON}")
        return STOPPED

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
        self.observers.turn_ended()

    # Ending otherwise ---------------------------------------------------------------------------------

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
                self.fail(str(exc))
                exc.status, exc.messages = self.conversation.status, list(self.new_messages)
                raise
            except BaseException:
                self.fail(_("The turn stopped on an internal error."))
                raise
        except TurnInterrupted as exc:
            # The claim is gone: nothing more may be written, and the stream now belongs to whoever holds it.
            # What the turn used still counts.
            self.meter.flush()
            self.ended = True
            self.observers.turn_abandoned(str(exc))
            exc.messages = list(self.new_messages)
            raise

    def fail(self, error: str) -> None:
        """End the turn as ``failed`` with every open call answered, so the next message works."""
        for message in self.ledger.close_open_calls("the turn ended with an error.", started=self.calls.started):
            self.record(message)
        self.observers.turn_failed(error)
        self.end(FAILED, error)

    def end_early(self, message: str) -> None:
        """A hook raised ``EndTurn``: answer any open call, then its message is the reply."""
        reason = "the turn was ended before this call was answered."
        for closed in self.ledger.close_open_calls(reason, started=self.calls.started):
            self.record(closed)
        self.record(self.ledger.add_message(Message.Role.ASSISTANT, message))
        self.end(IDLE)

    # Parts of the steps -------------------------------------------------------------------------------

    def request(self) -> ModelRequest:
        """The next request: instructions, the history under the memory policy, and the offered tools."""
        instructions = self.assistant.get_instructions(self.view.context)
        options = dict(self.assistant.model_options)
        if self.output is not None:
            instructions = f"{instructions}\n\n{self.output.spec.instructions()}"
            options["response_format"] = self.output.spec.response_format()
        return ModelRequest(
            model=self.assistant.get_model(),
            messages=[{"role": "system", "content": instructions}, *self.history.trimmed(*self._budget)],
            tools=self.offered_tools(),
            options=options,
        )

    def send(self, request: ModelRequest) -> ModelReply:
        """One request over the wire; what it used is counted whatever comes next, and stored with the next write."""
        on_delta = self.observers.delta if self.view.stream else None
        reply = self.client.complete(
            model=request.model, messages=request.messages, tools=request.tools, on_delta=on_delta, **request.options
        )
        self.meter.add(tokens=reply.usage.total_tokens, tool_calls=len(reply.tool_calls))
        return reply

    def offered_tools(self) -> list[dict[str, Any]]:
        """The tool definitions for the next request: all tools, or the search tool and what it has found."""
        tools = self.search.offered(self.tools) if self.search else list(self.tools.values())
        return tool_definitions(self.assistant, tools)

    def send_back(self, reply: ModelReply, problem: str) -> None:
        """An invalid structured answer: its tokens count, it and the correction go to the next request only."""
        assert self.output is not None
        self.ledger.add_usage(reply.usage)
        self.history += self.output.correction(reply, problem)
        self.observers.output_retry(self.output.retries_used, problem)

    @property
    def _budget(self) -> tuple[int | None, int | None]:
        return self.assistant.history_max_messages, self.assistant.history_max_tokens

    def record(self, message: Message) -> None:
        """A message this turn stored: it joins the history sent next, and everyone hears of it."""
        self.history.extend(storage.to_openai([message]))
        self.observers.message_added(message)


def tool_definitions(assistant: Assistant, tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The definitions of ``tools`` as the model gets them: with the assistant's argument extras (not on the
    search tool). The MCP endpoint lists its tools with these same schemas."""
    definitions = [t.definition() for t in tools]
    extra_fields = assistant.argument_extras
    if extra_fields is not None:
        definitions = [
            d if d["function"]["name"] == SEARCH_TOOL_NAME else with_extras(d, extra_fields) for d in definitions
        ]
    return definitions
