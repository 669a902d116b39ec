"""Celery tasks (the default runner, ``TOOLCALLING["TASKS"] = "celery"``): run an approved tool call, continue a
conversation after its decisions, run a background turn, and sweep what is due. The site owns the Celery app;
``app.autodiscover_tasks()`` finds these ``@shared_task``s. (``toolcalling.django_tasks`` has the same jobs for
Django's Tasks framework.)

Each task is a thin shell around its body in ``approval`` or ``engine``.

Tasks are acknowledged when a worker receives them (Celery's default, ``acks_late=False``), not when
they finish: a tool may charge a card or send an e-mail, and a task that a dying worker left behind
must not be run again blindly. Exactly-once does not rely on the broker anyway: each step is a
conditional status change in the database (``approved`` → ``running``), and a delivery that finds
its call ``running`` already answers it as failed instead of running it twice.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from . import _worker, approval, engine


@shared_task(name=engine.RUN_APPROVED_TOOL_CALL, acks_late=False, ignore_result=True)
def run_approved_tool_call(tool_call_id: int) -> bool:
    """Run one approved call as the conversation's user, then continue the conversation if it was the last."""
    return approval.run(tool_call_id)


@shared_task(name=engine.CONTINUE_CONVERSATION, acks_late=False, ignore_result=True)
def continue_conversation(conversation_id: str) -> bool:
    """Send the decided calls' results to the model and store its answer (one continuation wins the claim)."""
    return engine.continue_turn(conversation_id)


@shared_task(name=engine.RUN_TURN, ignore_result=True)
def run_turn(conversation_id: str, content: str | None, token: str | None = None) -> None:
    """Run a turn whose user message was posted with ``"background": true`` (``token``: the web request's
    claim on the conversation); its events go to the conversation's event stream."""
    engine.run_claimed_turn(conversation_id, content, token)


@shared_task(name="toolcalling.expire_waiting_tool_calls", ignore_result=True)
def expire_waiting_tool_calls() -> dict[str, Any]:
    """Expire calls waiting past ``APPROVAL_TIMEOUT``, fail approved calls whose worker stopped, and queue
    again the continuations the broker lost."""
    result = approval.sweep()
    return {
        "expired": [c.pk for c in result.expired],
        "failed": [c.pk for c in result.failed],
        "continued": [str(c.pk) for c in result.continued],
    }


@worker_ready.connect
def warn_when_the_worker_cannot_reach_the_model(**kwargs: Any) -> None:
    """A worker started without the model's settings says so at once, and its continuations' errors name them."""
    _worker.started("Celery worker")
