"""Client tools on the frontend protocols: the results a browser sends for the calls that wait for it (the AI SDK's
``addToolOutput``, AG-UI's tool messages), and the tools a frontend sends with its request (AG-UI's ``tools``).

Only a call that waits for the client takes a result: the outputs of calls the page shows already (server tools'
results it got from the stream, a result it sent before) are the page's copy of the history and are ignored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from .. import approval
from ..exceptions import AlreadyDecided, ImproperlyDefined
from ..models import Conversation, ToolCall
from ..toolkit import FRONTEND_TOOLS_KEY, ClientTool, assistants, frontend_tools


@dataclass(kw_only=True)
class ClientOutput:
    """What the browser's run of a call gave: its ``result``, or the ``error`` it met."""

    call_id: str  # the model's id of the call (the SDK's ``toolCallId``, AG-UI's ``toolCallId``)
    result: Any = None
    error: str | None = None


def ai_sdk_outputs(parts: list[dict[str, Any]]) -> list[ClientOutput]:
    """The outputs among the tool parts of the AI SDK's last (assistant) message: ``output-available`` parts
    with their ``output``, ``output-error`` parts with their ``errorText``."""
    found = []
    for part in parts:
        if not str(part.get("type", "")).startswith(("tool-", "dynamic-tool")) or not part.get("toolCallId"):
            continue
        if part.get("state") == "output-available":
            found.append(ClientOutput(call_id=str(part["toolCallId"]), result=part.get("output")))
        elif part.get("state") == "output-error":
            error = part.get("errorText")
            found.append(ClientOutput(call_id=str(part["toolCallId"]), error=error if isinstance(error, str) else ""))
    return found


def waiting_client_calls(
    conversation: Conversation, outputs: list[ClientOutput]
) -> list[tuple[ToolCall, ClientOutput]]:
    """The calls among ``outputs`` that wait for the client now, each with its output."""
    by_id = {output.call_id: output for output in outputs}
    calls = ToolCall.objects.select_related("conversation").filter(
        conversation=conversation,
        call_id__in=list(by_id),
        status=ToolCall.Status.AWAITING_APPROVAL,
        approver=ToolCall.Approver.CLIENT,
    )
    return [(call, by_id[call.call_id]) for call in calls.order_by("id")]


def apply_outputs(conversation: Conversation, user: Any, outputs: list[ClientOutput]) -> int:
    """Store the outputs of the calls that wait for the client, as ``POST tool-calls/{id}/result/`` does, as
    ``user`` (the conversation's owner: the endpoints find only the user's own conversations). Every result is
    checked before any is stored: one its tool's schema refuses is a 400 and nothing is stored. How many were
    stored (a call answered elsewhere first, in another tab say, is left to the stream to tell)."""
    pending = waiting_client_calls(conversation, outputs)
    for call, output in pending:
        approval.check_client_output(call, result=output.result, error=output.error)
    stored = 0
    for call, output in pending:
        try:
            approval.answer_client_call(call, user, result=output.result, error=output.error)
        except AlreadyDecided:
            continue
        stored += 1
    return stored


def ag_ui_outputs(run: Any) -> list[ClientOutput]:
    """The tool messages that end an AG-UI run's input (after its last assistant message): the results of the
    frontend's tools, as CopilotKit sends them. A message's content is its result (its JSON value when it is
    JSON, else the text); a message with an ``error`` reports that error."""
    found: list[ClientOutput] = []
    for message in reversed(run.messages or []):
        if message.role != "tool":
            break
        error = getattr(message, "error", None)
        result: Any = message.content
        try:
            result = json.loads(result)
        except (TypeError, ValueError, RecursionError):
            pass
        found.insert(0, ClientOutput(call_id=message.tool_call_id, result=result,
                                     error=error if isinstance(error, str) else None))  # fmt: skip
    return found


def keep_frontend_tools(conversation: Conversation, definitions: list[Any]) -> None:
    """Keep the tools a frontend sent with its request (when the conversation's assistant accepts them) in the
    conversation's ``state``, where its turns and their continuations find them (``Assistant.get_tools``). A tool
    that cannot be offered (no name, a schema that is not an object's) is left out; the same list again writes
    nothing."""
    if not assistants.is_registered(conversation.assistant_id):
        return  # the turn says so
    if not getattr(assistants.get(conversation.assistant_id), "accept_frontend_tools", False):
        return
    kept = []
    for item in definitions:
        try:
            kept.append(ClientTool.from_definition(item).as_definition())
        except ImproperlyDefined:
            continue
    if (conversation.state or {}).get(FRONTEND_TOOLS_KEY, []) == kept:
        return
    with transaction.atomic():
        row = Conversation.objects.select_for_update().only("state").get(pk=conversation.pk)
        state = dict(row.state or {})
        state[FRONTEND_TOOLS_KEY] = kept
        Conversation.objects.filter(pk=conversation.pk).update(state=state)
    conversation.state = state


def last_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of the last message of an AI SDK chat request (checked to be a list by its serializer)."""
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    return [p for p in last.get("parts") or [] if isinstance(p, dict)] if last.get("role") == "assistant" else []


def client_tool_names(conversation_id: Any) -> frozenset[str]:
    """The names of the client tools the conversation's assistant offers (declared, and the frontend's when it
    accepts them): what a stream needs to know before a call of one is gated. Its MCP servers are not asked."""
    conversation = Conversation.objects.filter(pk=conversation_id).only("assistant_id", "state").first()
    if conversation is None or not assistants.is_registered(conversation.assistant_id):
        return frozenset()
    assistant = assistants.get(conversation.assistant_id)
    names = {t.name for t in getattr(assistant, "client_tools", ())}
    if getattr(assistant, "accept_frontend_tools", False):
        # Never one named like a tool of the site's: that name is the site's tool (``Assistant.get_tools``).
        declared = {getattr(t, "name", t) for t in getattr(assistant, "tools", ())}
        names.update(t.name for t in frontend_tools(conversation) if t.name not in declared)
    return frozenset(names)
