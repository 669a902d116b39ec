"""A tool call a client asks for directly (an MCP client), with no model: one short turn on the one call path.

It is stored like a model's call, so the admin shows it and the history stays one the OpenAI API accepts:
an assistant message with the one call, then the tool message that answers it, in a conversation whose
``origin`` says which kind of client asked. The call goes through the turn's own steps — validation, limits,
the approval gate, hooks, the run, the answer — so a gated call waits for a decision and a worker runs it, as
in a chat. Once it is decided, the conversation is done: no model asked for the call, so none is asked about
its result.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied

from ..exceptions import UsageLimitExceeded
from ..model_apis import ModelReply, RequestedCall
from ..models import Conversation, ToolCall
from ..toolkit import storable
from ._steps import Answered
from ._turn import Turn

if TYPE_CHECKING:
    from ..toolkit import AssistantLike


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
    calls: list[ToolCall] = []
    try:
        for step in Turn(assistant, conversation, user=user).iter(asked=ModelReply(content="", tool_calls=[asked])):
            if isinstance(step, Answered):
                calls = step.calls
    except UsageLimitExceeded:  # refused at the claim: nothing of the call was stored, nor is its conversation
        conversation.delete()
        raise
    # No call when a hook ended the turn (``EndTurn``) before it was stored; its message is the last one.
    return calls[0] if calls else None
