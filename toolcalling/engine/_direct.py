"""A tool call a client asks for directly (an MCP client), with no model: one short turn on the one call path.

It is stored like a model's call, so the admin shows it and the history stays one the OpenAI API accepts:
an assistant message with the one call (``Message.model`` says which client asked), then the tool message
that answers it. The call goes through the turn's own steps — validation, limits, the approval gate, hooks,
the run, the answer — so a gated call waits for a decision and a worker runs it, as in a chat. Once it is
decided, the conversation is done: no model asked for the call, so none is asked about its result.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from ..models import ToolCall
from . import _storage as storage
from ._replies import ModelReply, RequestedCall
from ._runner import conversation_for
from ._turn import IDLE, Turn

if TYPE_CHECKING:
    from ..assistant import Assistant


def call_directly(
    assistant: Assistant, user: Any, name: str, arguments: dict[str, Any] | None, *, client: str, title: str = ""
) -> ToolCall | None:
    """Run (or queue for approval) one call of ``name`` for ``user`` in a new conversation; the stored call.

    The call's ``status`` says how it went: ``succeeded``, ``failed`` (its ``result`` says why) or
    ``awaiting_approval``. With ``TOOL_ERRORS = "raise"`` a failed call raises ``ToolExecutionError``
    after it is stored, as in a chat turn. ``None`` when a hook ended the turn (``EndTurn``) before the call.
    """
    conversation = conversation_for(assistant, user, None)
    turn = Turn(assistant, conversation, user=user)
    turn.claim(metered=False)  # no model is asked, so no usage limit counts it
    if title:
        turn.ledger.set_title_if_empty(title)
    reply = ModelReply(
        content="",
        tool_calls=[RequestedCall(id=f"call_{uuid.uuid4().hex}", name=name, arguments=json.dumps(arguments or {}))],
        model=f"{storage.CLIENT_PREFIX}{client}",
    )
    calls: list[ToolCall] = []
    with turn.guard():
        turn.start(None)
        message, calls = turn.ledger.add_reply(reply)
        turn.record(message)
        turn.end(turn.run_calls(calls) or IDLE)
    # No call when a hook ended the turn (``EndTurn``) before it was stored; its message is the last one.
    return calls[0] if calls else None
