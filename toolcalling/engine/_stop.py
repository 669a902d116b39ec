"""Stopping a running turn from any process: the request is stored on the conversation, and the turn, wherever
it runs, ends itself at its next step boundary (its writes report the request; it reads it before each model
call; see ``Ledger``). Only a turn whose process died is ended here."""

from __future__ import annotations

import datetime

from django.utils import timezone

from ..conf import toolcalling_settings
from ..exceptions import NotRegistered, NotRunning
from ..models import Conversation
from ..toolkit import assistants
from ._turn import Turn

RUNNING = Conversation.Status.RUNNING


def request_stop(conversation: Conversation) -> bool:
    """Store a stop request for the running turn of ``conversation``; False when no turn is running."""
    now = timezone.now()
    return bool(Conversation.objects.filter(pk=conversation.pk, status=RUNNING).update(stop_requested_at=now))


def stop_turn(conversation: Conversation) -> None:
    """Ask the running turn of ``conversation`` to stop at its next step boundary, in whichever process runs it
    (``NotRunning`` when no turn runs). A turn that went quiet for ``STALE_TURN_TIMEOUT`` cannot hear it (its
    process died): it is taken over and ended here, its open calls answered as after any takeover."""
    if not request_stop(conversation):
        conversation.refresh_from_db(fields=["status"])
        raise NotRunning(status=conversation.status)
    conversation.refresh_from_db(fields=["status", "updated_at", "turn_token"])
    cutoff = timezone.now() - datetime.timedelta(seconds=toolcalling_settings.STALE_TURN_TIMEOUT)
    if conversation.status != RUNNING or conversation.updated_at >= cutoff:
        return
    try:
        assistant = assistants.get(conversation.assistant_id)()
    except NotRegistered:
        return  # nothing can run it; the next message takes it over as usual
    Turn(assistant, conversation).end_stale()
