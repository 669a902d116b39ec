"""Going on with a turn whose process died: from what is stored, with no model request repeated whose answer was
stored and no call run twice.

A turn stores the model's answer with its calls (``running``, none started) before it runs them, one after
another, each answer stored as it comes. So of the calls still open when the process died, only the first may
have started: it runs again if its tool may (``idempotent``, with the same ``ctx.idempotency_key``, or ``atomic``),
and otherwise waits for a person to say what happened (``outcome_unknown``); the calls after it never started and
run now. The turn then waits as a turn with gated calls does (``awaiting_approval``), and the approval machinery
asks the model again once nothing is left to decide.
"""

from __future__ import annotations

from ..conf import toolcalling_settings
from ..models import Conversation, ToolCall
from ..toolkit import assistants
from . import _storage as storage
from ._ending import AWAITING_APPROVAL
from ._turn import Turn

INTERRUPTED = "the process running this call stopped; whether it took effect is unknown"


def resume_stale_turn(conversation: Conversation) -> bool:
    """Take over the turn of ``conversation`` if it went quiet for ``STALE_TURN_TIMEOUT`` and deal with its open
    calls (see the module docstring); False if it was not quiet (or another process took it over first).

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
        for position, call in enumerate(open_calls.order_by("message_id", "index")):
            tool = turn.tools.get(call.name)
            if position == 0 and not (tool is not None and tool.may_run_again):
                answer = turn.calls.mark_unknown(call, INTERRUPTED)
            else:
                answer = turn.calls.handle(call)
            if answer is not None and answer.message is not None:
                turn.answered(call, answer.message)
            if answer is not None and answer.error is not None:
                raise answer.error
        turn.end(AWAITING_APPROVAL)
    return True
