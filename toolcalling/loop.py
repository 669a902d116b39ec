"""The tool-calling loop: one user turn from the stored history to the model's final answer."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.utils import timezone
from pydantic import BaseModel

from . import events, extras, memory, signals, storage, telemetry
from .assistant import Assistant
from .client import ModelClient, ModelReply, get_client
from .conf import toolcalling_settings
from .context import ToolContext
from .definitions import InvalidArguments, Tool, result_to_text
from .exceptions import (
    ConversationBusy,
    ToolCallLimitExceeded,
    ToolExecutionError,
    TurnError,
)
from .hooks import EndTurn, ModelRequest
from .models import Conversation, Message, ToolCall
from .structured import OutputSpec, check_answer
from .tool_search import SEARCH_TOOL_NAME, ToolSearch, is_enabled

logger = logging.getLogger("toolcalling")

Listener = Callable[[str, dict[str, Any]], None]


class Turn:
    """Runs one turn of a conversation: ask the model, run the calls it asks for, repeat until it answers.

    ``run(content)`` runs a turn for a new user message; ``run(None)`` continues a turn whose
    gated calls have all been decided. The steps (``begin``, ``ask_model``, ``accept_reply``,
    ``handle_calls``) are public so code that must own each iteration can drive them itself
    (``toolcalling.runner.Stepper`` does).
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
    ) -> None:
        self.assistant = assistant
        self.conversation = conversation
        self.user = user if user is not None else conversation.user
        self.client = client or get_client()
        self.ctx: ToolContext = assistant.build_context(self.user, conversation)
        self.hooks = list(assistant.get_hooks())
        self.listeners = list(listeners or [])
        self.stream = stream
        self.tools: dict[str, Tool] = {t.name: t for t in assistant.get_tools(self.ctx)}
        extras.check(assistant.argument_extras, self.tools.values(), type(assistant).__qualname__)
        self.search: ToolSearch | None = None
        if is_enabled(assistant, len(self.tools)):
            self.search = ToolSearch(self.tools, conversation, max_results=assistant.tool_search_results)
            self.tools[SEARCH_TOOL_NAME] = self.search.tool
        self.output: OutputSpec | None = assistant.get_output_spec(output_type)
        self.output_value: BaseModel | None = None
        self.output_retries_used = 0
        self.history: list[dict[str, Any]] = []
        self.new_messages: list[Message] = []
        self.calls_per_tool: Counter[str] = Counter()
        self.total_calls = 0
        self.model_calls = 0
        self.finished = False
        self.span: Any = None

    # Running a turn -------------------------------------------------------------------------------

    def run(self, content: str | None = None, *, claimed: bool = False) -> list[Message]:
        """Run the turn to its end and return the messages it added.

        ``claimed=True``: the caller already called ``claim()`` (to answer "busy" before handing the
        turn to a thread or a worker).
        """
        self.begin(content, claimed=claimed)
        with self.guard():
            while self.conversation.status == Conversation.Status.RUNNING:
                self.handle_reply(self.ask_model())
        return self.new_messages

    def begin(self, content: str | None = None, *, claimed: bool = False) -> None:
        """Claim the conversation and start the turn: store the user's message and load the history."""
        if not claimed:
            self.claim(continuing=content is None)
        self.span = telemetry.start_turn(self)
        with self.guard():
            self.start(content)

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Around every step: ``EndTurn`` ends the turn with its message, errors fail it; the end runs once."""
        try:
            yield
        except EndTurn as end:
            self.end_early(end.message)
        except TurnError as exc:
            self.fail(str(exc))
            raise
        except BaseException:
            self.fail("The turn stopped on an internal error.")
            raise
        finally:
            if self.conversation.status != Conversation.Status.RUNNING and not self.finished:
                self.finish()

    def claim(self, *, continuing: bool = False) -> None:
        """Mark the conversation ``running``; only one turn runs per conversation at a time."""
        conv = self.conversation
        if continuing:
            if not storage.claim(conv, from_statuses=[Conversation.Status.AWAITING_APPROVAL]):
                raise ConversationBusy("The conversation is not waiting to continue.")
            return
        if storage.claim(conv, from_statuses=[Conversation.Status.IDLE, Conversation.Status.FAILED]):
            return
        if storage.claim(conv, from_statuses=[], stale_after=toolcalling_settings.STALE_TURN_TIMEOUT):
            # The turn's process died: answer the calls it left open, then go on as usual.
            for message in storage.close_open_calls(conv, "the turn was interrupted."):
                self._added(message)
            return
        conv.refresh_from_db(fields=["status"])
        if conv.status == Conversation.Status.AWAITING_APPROVAL:
            raise ConversationBusy(
                "The conversation is waiting for a staff member to approve a tool call. "
                "Wait for the decision or cancel the waiting calls."
            )
        raise ConversationBusy("The conversation is busy with another message. Try again when it has answered.")

    def start(self, content: str | None) -> None:
        """Store the user's message (if any) and load the history the model will see."""
        conv = self.conversation
        if content is not None:
            self._added(storage.add_message(conv, Message.Role.USER, content))  # also tells the listeners
            if not conv.title:
                conv.title = " ".join(content.split())[:80]
                conv.save(update_fields=["title"])
        self._call_hooks("on_turn_start", self)
        messages = storage.load_messages(conv)
        self._count_calls_of_this_turn(messages)
        self.history = memory.build_history(self.assistant, messages)

    def ask_model(self) -> ModelReply:
        """Send the history and the offered tools to the model once."""
        if self.model_calls >= toolcalling_settings.MAX_MODEL_CALLS:
            raise TurnError(
                f"The model was asked {self.model_calls} times in one turn without a final answer; stopped."
            )
        instructions = self.assistant.get_instructions(self.ctx)
        options = dict(self.assistant.model_options)
        if self.output is not None:
            instructions = f"{instructions}\n\n{self.output.instructions()}"
            options["response_format"] = self.output.response_format()
        request = ModelRequest(
            model=self.assistant.get_model(),
            messages=[{"role": "system", "content": instructions}, *memory.trim(self.assistant, self.history)],
            tools=self.offered_tools(),
            options=options,
        )
        self._call_hooks("before_model_call", self, request)
        signals.model_call_started.send(type(self.assistant), turn=self, request=request)
        started = time.monotonic()
        with telemetry.model_call(self, request) as span:
            reply = self.client.complete(
                model=request.model,
                messages=request.messages,
                tools=request.tools,
                on_delta=self._on_delta if self.stream else None,
                **request.options,
            )
            telemetry.record_reply(span, reply)
        self.model_calls += 1
        duration_ms = (time.monotonic() - started) * 1000
        logger.info(
            "model call %s: %d tool calls, %d tokens, %.0f ms",
            request.model,
            len(reply.tool_calls),
            reply.usage.total_tokens,
            duration_ms,
            extra={"conversation": str(self.conversation.pk)},
        )
        self._call_hooks("after_model_call", self, reply, reverse=True)
        signals.model_call_finished.send(type(self.assistant), turn=self, reply=reply, duration_ms=duration_ms)
        return reply

    def offered_tools(self) -> list[dict[str, Any]]:
        """The tool definitions for the next request: all tools, or the search tool and what it has found."""
        tools = self.search.offered(self.tools) if self.search else list(self.tools.values())
        definitions = [t.definition() for t in tools]
        extra_fields = self.assistant.argument_extras
        if extra_fields is not None:
            definitions = [
                d if d["function"]["name"] == SEARCH_TOOL_NAME else extras.add_to_definition(d, extra_fields)
                for d in definitions
            ]
        return definitions

    def handle_reply(self, reply: ModelReply) -> None:
        """Store the answer; run its calls; decide whether the turn goes on, waits, or is done."""
        calls = self.accept_reply(reply)
        if calls:
            self.handle_calls(calls)

    def accept_reply(self, reply: ModelReply) -> list[ToolCall]:
        """Store the answer and return the calls it asks for; an answer without calls ends the turn.

        With an output type, a final answer that does not validate is sent back to the model instead
        (see ``retry_output``) and nothing is stored; the turn goes on.
        """
        data = None
        if not reply.tool_calls and self.output is not None:
            value = self.retry_output(reply)
            if value is None:
                return []
            data = value.model_dump(mode="json")
        message, calls = storage.add_reply(self.conversation, reply, data=data)
        self._added(message)
        if not calls:
            storage.set_status(self.conversation, Conversation.Status.IDLE)
        return calls

    def retry_output(self, reply: ModelReply) -> BaseModel | None:
        """The parsed final answer, or ``None`` when it was sent back to the model (see ``structured``)."""
        assert self.output is not None
        return check_answer(self, self.output, reply)

    def handle_calls(self, calls: list[ToolCall], decided: dict[int, tuple[str, str]] | None = None) -> None:
        """Run (or queue for approval) each call of one answer in the order given.

        ``decided`` maps call ids to a ``(status, result)`` already chosen by the caller (a stepper that
        skipped or rejected them); those calls are answered with it and not run.
        """
        direct: list[str] = []
        for call in calls:
            if decided and call.pk in decided:
                self.calls_per_tool[call.name] += 1
                self.total_calls += 1
                status, text = decided[call.pk]
                result = self._answer(call, status, text, "" if status == ToolCall.Status.SUCCEEDED else text)
            else:
                result = self.handle_call(call)
            tool = self.tools.get(call.name)
            if tool is not None and tool.return_direct and call.status == ToolCall.Status.SUCCEEDED:
                direct.append(result or "")
        if any(c.status == ToolCall.Status.AWAITING_APPROVAL for c in calls):
            storage.set_status(self.conversation, Conversation.Status.AWAITING_APPROVAL)
            self.emit("awaiting_approval", {"tool_calls": [self._call_info(c) for c in calls if c.requires_approval]})
        elif len(direct) == len(calls):
            self._add_reply_text("\n\n".join(direct))
            storage.set_status(self.conversation, Conversation.Status.IDLE)

    def handle_call(self, call: ToolCall) -> str | None:
        """Validate one call, check limits and approval, run it, and answer it to the model."""
        self.calls_per_tool[call.name] += 1
        self.total_calls += 1
        s = toolcalling_settings
        if self.calls_per_tool[call.name] > s.MAX_CALLS_PER_TOOL or self.total_calls > s.MAX_TOTAL_TOOL_CALLS:
            limit = (
                f"at most {s.MAX_CALLS_PER_TOOL} calls to {call.name!r} per turn"
                if self.calls_per_tool[call.name] > s.MAX_CALLS_PER_TOOL
                else f"at most {s.MAX_TOTAL_TOOL_CALLS} tool calls per turn"
            )
            if s.ON_LIMIT_EXCEEDED == "raise":
                raise ToolCallLimitExceeded(f"Tool call limit exceeded: {limit}.")
            return self._answer(call, ToolCall.Status.FAILED, f"Error: not run, the limit is {limit}.")
        tool = self.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return self._tool_error(call, f"Error: there is no tool named {call.name!r}. Available tools: {available}.")
        extra_fields = self.assistant.argument_extras if tool is not self._search_tool else None
        try:
            raw: Any = call.raw_arguments
            extra_value = None
            if extra_fields is not None:
                raw, extra_value = extras.split(raw, extra_fields)
            arguments = tool.parse_arguments(raw)
        except InvalidArguments as exc:
            return self._tool_error(call, f"Error: invalid arguments for {tool.name}: {exc}. Fix them and call again.")
        call.arguments = arguments.model_dump(mode="json")
        if extra_value is not None:
            call.extras = extra_value.model_dump(mode="json")
            self.assistant.on_argument_extras(call, extra_value)
        self.ctx.tool_call = call
        try:
            gated = tool.needs_approval(self.ctx, call.arguments)
        except Exception as exc:
            logger.exception("approval rule of %s failed", tool.name)
            return self._tool_error(call, f"Error: {type(exc).__name__}: {exc}", exc)
        if gated:
            call.requires_approval = True
            call.status = ToolCall.Status.AWAITING_APPROVAL
            call.save(update_fields=["arguments", "extras", "requires_approval", "status"])
            signals.approval_requested.send(ToolCall, tool_call=call)
            self.emit("tool_call", self._call_info(call))
            return None
        return self.execute(tool, call, arguments)

    def execute(self, tool: Tool, call: ToolCall, arguments: BaseModel) -> str:
        """Run the tool function (hooks first) and answer the call with its result or error."""
        span = telemetry.start_tool(self, call)
        try:
            status, text, error = self._run_with_hooks(tool, call, arguments)
            if status == ToolCall.Status.FAILED and toolcalling_settings.TOOL_ERRORS == "raise":
                self._answer(call, status, text, error)
                raise ToolExecutionError(f"Tool {tool.name!r} failed: {error}")
            return self._answer(call, status, text, error)
        finally:
            telemetry.end_tool(span, call)

    def run_approved(self, call: ToolCall, *, note: str = "") -> bool:
        """Run one approved call (already moved to ``running``) with this turn's rebuilt context.

        Used by the Celery task, not by ``run``: the conversation stays ``awaiting_approval`` and is
        continued separately once every call of the answer is decided. ``note`` is put before the
        result the model reads (e.g. that an approver changed the arguments). Tool errors always go
        back to the model here, whatever ``TOOL_ERRORS`` says: nobody is waiting on a request to see
        them raised. Returns False when the call had been answered meanwhile (a sweep marked it
        failed), in which case nothing is stored twice.
        """
        span = telemetry.start_tool(self, call)
        try:
            status, text, error = self._run_approved_tool(call)
            message = storage.answer_call_if(
                call, from_status=ToolCall.Status.RUNNING, status=status, result=f"{note}{text}", error=error
            )
        finally:
            telemetry.end_tool(span, call)
        if message is None:
            logger.warning("tool call %s was answered while it ran; its result is dropped: %s", call.pk, text)
            return False
        self._added(message)
        signals.tool_call_finished.send(type(self.assistant), turn=self, tool_call=call)
        self.emit("tool_call_finished", self._call_info(call))
        return True

    def _run_approved_tool(self, call: ToolCall) -> tuple[str, str, str]:
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolCall.Status.FAILED, f"Error: the tool {call.name!r} is not available.", ""
        try:
            arguments = tool.parse_arguments(call.arguments)
        except InvalidArguments as exc:
            return ToolCall.Status.FAILED, f"Error: invalid arguments for {tool.name}: {exc}.", ""
        return self._run_with_hooks(tool, call, arguments)

    def _run_with_hooks(self, tool: Tool, call: ToolCall, arguments: BaseModel) -> tuple[str, str, str]:
        """``before_tool_call`` hooks, the tool, ``after_tool_call`` hooks: ``(status, text, error)``."""
        call.started_at = call.started_at or timezone.now()
        self.ctx.tool_call = call
        signals.tool_call_started.send(type(self.assistant), turn=self, tool_call=call)
        self.emit("tool_call_started", self._call_info(call))
        replaced = self._call_hooks("before_tool_call", self, call, call.arguments, first_result=True)
        if replaced is not None:
            return ToolCall.Status.SUCCEEDED, replaced, ""
        status, text, error = run_tool(tool, self.ctx, arguments)
        if status == ToolCall.Status.FAILED and toolcalling_settings.TOOL_ERRORS == "raise":
            return status, text, error
        # after_tool_call hooks see the outcome; it is saved with the result when the call is answered.
        call.status, call.error = status, error
        for hook in reversed(self.hooks):
            changed = hook.after_tool_call(self, call, text)
            if changed is not None:
                text = changed
        return status, text, error

    # Ending -----------------------------------------------------------------------------------------

    def fail(self, error: str) -> None:
        """End the turn as ``failed`` with every open call answered, so the next message works."""
        for message in storage.close_open_calls(self.conversation, "the turn ended with an error."):
            self._added(message)
        storage.set_status(self.conversation, Conversation.Status.FAILED, error)
        self.emit("error", {"detail": error})

    def end_early(self, message: str) -> None:
        """A hook raised ``EndTurn``: answer any open call, then its message is the reply."""
        for closed in storage.close_open_calls(self.conversation, "the turn was ended before this call ran."):
            self._added(closed)
        self._add_reply_text(message)
        storage.set_status(self.conversation, Conversation.Status.IDLE)

    def finish(self) -> None:
        self.finished = True
        try:
            self._call_hooks("on_turn_end", self, self.new_messages, reverse=True)
            signals.turn_finished.send(type(self.assistant), turn=self, messages=self.new_messages)
            self.emit("turn_end", {"status": self.conversation.status})
        finally:
            telemetry.end_turn(self)

    # Events -----------------------------------------------------------------------------------------

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Publish on the conversation's event stream (see ``events``), then tell the listeners."""
        events.publish(self.conversation.pk, event, data)
        for listener in self.listeners:
            listener(event, data)

    def _on_delta(self, text: str) -> None:
        self.emit("delta", {"content": text})

    # Internals --------------------------------------------------------------------------------------

    def _call_hooks(self, step: str, *args: Any, reverse: bool = False, first_result: bool = False) -> Any:
        for hook in reversed(self.hooks) if reverse else self.hooks:
            result = getattr(hook, step)(*args)
            if first_result and result is not None:
                return result
        return None

    def _count_calls_of_this_turn(self, messages: list[Message]) -> None:
        """Limits count the current turn only: the calls since the last user message."""
        for message in reversed(messages):
            if message.role == Message.Role.USER:
                break
            for call in message.tool_calls.all():
                self.calls_per_tool[call.name] += 1
                self.total_calls += 1

    def _tool_error(self, call: ToolCall, text: str, exc: BaseException | None = None) -> str:
        if toolcalling_settings.TOOL_ERRORS == "raise":
            self._answer(call, ToolCall.Status.FAILED, text, text)
            raise ToolExecutionError(text.removeprefix("Error: ")) from exc
        return self._answer(call, ToolCall.Status.FAILED, text, text)

    def _answer(self, call: ToolCall, status: str, text: str, error: str = "") -> str:
        message = storage.answer_call(call, status=status, result=text, error=error)
        self._added(message)
        signals.tool_call_finished.send(type(self.assistant), turn=self, tool_call=call)
        self.emit("tool_call_finished", self._call_info(call))
        return text

    def _add_reply_text(self, text: str) -> None:
        self._added(storage.add_message(self.conversation, Message.Role.ASSISTANT, text))

    def _added(self, message: Message) -> None:
        self.new_messages.append(message)
        self.history.extend(storage.to_openai([message]))
        self.emit("message", events.describe_message(message))

    @property
    def _search_tool(self) -> Tool | None:
        return self.search.tool if self.search else None

    @staticmethod
    def _call_info(call: ToolCall) -> dict[str, Any]:
        return {"id": call.pk, "call_id": call.call_id, "name": call.name, "status": call.status}


def run_tool(tool: Tool, ctx: ToolContext, arguments: BaseModel) -> tuple[str, str, str]:
    """Call a tool function; return ``(status, text for the model, error)``. Never raises for tool errors."""
    try:
        value = tool.invoke(ctx, arguments)
        return ToolCall.Status.SUCCEEDED, result_to_text(value), ""
    except Exception as exc:
        logger.warning("tool %s failed: %s: %s", tool.name, type(exc).__name__, exc)
        error = f"{type(exc).__name__}: {exc}"
        return ToolCall.Status.FAILED, f"Error: {error}", error
