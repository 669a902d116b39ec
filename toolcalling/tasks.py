"""Celery tasks: run an approved tool call, continue a conversation after its decisions, sweep expired calls.

The site owns the Celery app; ``app.autodiscover_tasks()`` finds these ``@shared_task``s.

Tasks are acknowledged when a worker receives them (Celery's default, ``acks_late=False``), not when
they finish: a tool may charge a card or send an e-mail, and a task that a dying worker left behind
must not be run again blindly. Exactly-once does not rely on the broker anyway: each step is a
conditional status change in the database (``approved`` → ``running``), and a delivery that finds
its call ``running`` already answers it as failed instead of running it twice.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from . import approval, storage
from .assistant import Assistant
from .exceptions import ConversationBusy, NotRegistered, TurnError
from .loop import Turn
from .models import Conversation

logger = logging.getLogger("toolcalling")


@shared_task(name="toolcalling.run_approved_tool_call", acks_late=False, ignore_result=True)
def run_approved_tool_call(tool_call_id: int) -> bool:
    """Run one approved call as the conversation's user, then continue the conversation if it was the last."""
    call = approval.start_run(tool_call_id)
    if call is None:
        return False
    conversation = call.conversation
    try:
        assistant = Assistant.get(conversation.assistant_id)
    except NotRegistered as exc:
        approval.fail_running(call, str(exc), f"Error: not run: {exc}")
        return False
    # The context is rebuilt from stored ids: the requester (conversation.user), never the approver.
    Turn(assistant, conversation).run_approved(call, note=approval.edit_note(call))
    approval.continue_when_decided(conversation)
    return True


@shared_task(name="toolcalling.continue_conversation", acks_late=False, ignore_result=True)
def continue_conversation(conversation_id: str) -> bool:
    """Send the decided calls' results to the model and store its answer (one continuation wins the claim)."""
    conversation = Conversation.objects.select_related("user").filter(pk=conversation_id).first()
    if conversation is None or conversation.status != Conversation.Status.AWAITING_APPROVAL:
        return False
    try:
        assistant = Assistant.get(conversation.assistant_id)
    except NotRegistered as exc:
        storage.set_status(conversation, Conversation.Status.FAILED, str(exc))
        return False
    try:
        Turn(assistant, conversation).run(None)
    except ConversationBusy:
        return False  # another finishing call continued it already
    except TurnError as exc:
        # Turn.run has stored the failure on the conversation; the user sees it on the next GET.
        logger.warning("conversation %s could not continue: %s", conversation_id, exc)
        return False
    return True


@shared_task(name="toolcalling.expire_waiting_tool_calls", ignore_result=True)
def expire_waiting_tool_calls() -> dict[str, Any]:
    """Expire calls waiting past ``APPROVAL_TIMEOUT``, fail approved calls whose worker stopped, and queue
    again the continuations the broker lost."""
    expired = approval.expire()
    stalled = approval.fail_stalled()
    resumed = approval.continue_stalled()
    return {
        "expired": [c.pk for c in expired],
        "failed": [c.pk for c in stalled],
        "continued": [str(c.pk) for c in resumed],
    }


# Background turns (the body is in streaming.py) ------------------------------------------------------


@shared_task(name="toolcalling.run_turn", ignore_result=True)
def run_turn(conversation_id: str, content: str) -> None:
    """Run a turn whose user message was posted with ``"background": true``; its events go to the
    conversation's event stream."""
    from .streaming import run_background_turn

    run_background_turn(conversation_id, content)
