"""The tool-calling loop: one user turn, from the stored history to the model's final answer.

``Turn.iter()`` is the only loop, and it reads top to bottom: ``claim`` the conversation, ``start`` (store
the user's message, load the history), then per model answer ``answer`` (ask the model, store its answer)
and ``run_calls``, until a step says how the turn ends; then ``end``. Each step returns a value (``_steps``)
that says what happened, and the loop yields it: ``run()`` and the stream, the stepper, background turns and
direct client calls only consume them.

Two things outside the turn end it at a step boundary: its usage limits (checked before each model call; the
turn fails with ``UsageLimitExceeded``) and its owner's stop request (each fenced write reads it, so it is known
before the next model call or tool call; the loop then ends the turn ``stopped``).
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.db import router
from django.utils.translation import gettext as _
from pydantic import BaseModel

from ..attachments import attach
from ..conf import toolcalling_settings
from ..exceptions import ModelCallLimitExceeded, OutputValidationError
from ..hooks import ModelRequest, TurnView
from ..model_apis import ModelAPI, ModelReply, get_model_api
from ..models import Attachment, Conversation, Message, ToolCall
from ..toolkit import SEARCH_TOOL_NAME, Tool, ToolSearch, check_extras, search_enabled, with_extras
from ..usage import Meter, Pricing
from . import _memory as memory
from . import _storage as storage
from ._calls import CallPath, Limits
from ._claiming import TurnClaim
from ._ending import AWAITING_APPROVAL, IDLE, STOPPED, STOPPED_REASON, TurnEnding
from ._observers import Listener, Observers
from ._steps import Answered, CallsAnswered, Ended, ModelWait, Step
from ._structured import OutputCheck

if TYPE_CHECKING:
    from ..toolkit import AssistantLike


class Turn(TurnClaim, TurnEnding):
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
        self.hooks = assistant.get_hooks()
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
        self.calls = CallPath(
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

    def iter(
        self, content: str | None = None, *, claimed: bool = False, asked: ModelReply | None = None
    ) -> Generator[Step, Any, None]:
        """Run the turn, yielding each step's outcome; the last is ``Ended``.

        ``claimed=True``: the caller already called ``claim()`` (to answer "busy" before handing the turn to a
        thread or a worker). ``asked``: calls a client asked for directly (an MCP client), run as if a model
        had asked for them; once they are answered (or decided) the turn is over, as no model waits for them.
        """
        if not claimed:
            direct = len(asked.tool_calls) if asked is not None else 0
            self.claim(continuing=content is None and asked is None, content=content, direct_calls=direct)
            content = None  # stored with the claim, in one transaction
        with self.guard():
            self.start(content)
            ending: str | None = None
            if self.continuing and self.conversation.origin == Conversation.Origin.MCP:
                ending = IDLE  # a client's direct calls are decided: no model is asked about their results
            while ending is None:
                answered = self.store(asked) if asked is not None else (yield from self.answer())
                if answered is None:  # the owner's stop request, read by the last write
                    ending = STOPPED
                    break
                yield answered
                if not answered.calls:
                    ending = IDLE
                    break
                if answered.held:
                    self.ledger.check_stop()  # the consumer may have taken its time since the answer was stored
                outcome = self.run_calls(answered.calls, answered.decisions)
                yield outcome
                ending = outcome.ending if asked is None else outcome.ending or IDLE
            self.end(ending)
        yield Ended(status=self.conversation.status, stopped=self.view.stopped)

    def start(self, content: str | None) -> None:
        """Store the user's message (unless the claim did) and load the history the model will see."""
        if content is not None:
            if not self.turn_counted and not self.meter.urgent:  # else the claim counted it (see ``claim``)
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
                self.ledger.call_ids = {call["id"] for item in items for call in item.get("tool_calls", ())}
        self.limits.count_current_turn(self.history.items)

    def answer(self) -> Generator[Any, Any, Answered | None]:
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

    def store(self, reply: ModelReply, *, data: Any = None) -> Answered:
        """Store an answer with its calls; a final answer and the turn's end in one transaction."""
        message, calls = self.ledger.add_reply(reply, data=data, ending=None if reply.tool_calls else IDLE)
        self.record(message)
        return Answered(message=message, calls=calls)

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

    def run_calls(self, calls: list[ToolCall], decided: dict[int, tuple[str, str]] | None = None) -> CallsAnswered:
        """Run (or queue for approval) each call of one answer in the order given.

        ``decided`` maps call ids to a ``(status, result)`` already chosen by the consumer (a stepper that
        skipped or rejected them); those calls are answered with it and not run.
        """
        direct: list[str] = []
        for call in calls:
            # The write that stored the answer, or the last call's result, just now read any stop request.
            if self.ledger.stop_requested:
                return CallsAnswered(calls=calls, ending=self.stop_calls(calls))
            if decided and call.pk in decided:
                answer = self.calls.answer_decided(call, *decided[call.pk])
            else:
                answer = self.calls.handle(call, durable=call is not calls[-1])  # see ``CallPath.handle``
            if answer.message is not None:
                self.answered(call, answer.message)
            if answer.error is not None:
                raise answer.error
            tool = self.tools.get(call.name)
            if tool is not None and tool.return_direct and call.status == ToolCall.Status.SUCCEEDED:
                direct.append(answer.text or "")
        if any(c.status == ToolCall.Status.AWAITING_APPROVAL for c in calls):
            self.observers.awaiting_approval([c for c in calls if c.requires_approval])
            return CallsAnswered(calls=calls, ending=AWAITING_APPROVAL)
        if len(direct) == len(calls):  # the results are the reply
            self.record(self.ledger.add_message(Message.Role.ASSISTANT, "\n\n".join(direct), ending=IDLE))
            return CallsAnswered(calls=calls, ending=IDLE)
        return CallsAnswered(calls=calls, ending=None)

    def stop_calls(self, calls: list[ToolCall]) -> str:
        """The owner stopped the turn: this answer's calls not run (or waiting) are answered "stopped by the user"."""
        for call in calls:
            unanswered = call.status in (ToolCall.Status.RUNNING, ToolCall.Status.AWAITING_APPROVAL)
            if unanswered and call.pk not in self.calls.started:
                self.answered(call, self.calls.withdraw(call, f"Not run: {STOPPED_REASON}"))
        return STOPPED

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
            messages=[{"role": "system", "content": instructions}, *self.history.trimmed(*budget)],
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
            self.history.extend(storage.to_openai([message]))
        self.observers.message_added(message)

    def announce_opening(self) -> None:
        """The user's message of a conversation the turn's first write stored (``claim_later``), heard of
        once it is stored; it is in the history already."""
        if self.opening is not None and self.opening.pk is not None:
            opening, self.opening = self.opening, None
            self.observers.message_added(opening)

    def answered(self, call: ToolCall, message: Message) -> None:
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
