"""The app's background jobs as Django Tasks, for sites with ``TOOLCALLING["TASKS"] = "django"``: run an approved
tool call, continue a conversation after its decisions, run a background turn, and sweep what is due. The same
jobs as the Celery tasks of ``toolcalling.tasks``, run by the site's task backend (``settings.TASKS``) instead.

Each task is a thin shell around its body in ``approval`` or ``engine``, as the Celery ones are: exactly-once rests
on the conditional status changes in the database (``approved`` → ``running``, the conversation's claim), not on
the backend, so a task delivered twice, or left behind by a worker that died, never runs a call twice.
"""

from __future__ import annotations

from typing import Any

from . import approval, engine
from ._task_framework import task


@task()
def run_approved_tool_call(tool_call_id: int) -> bool:
    """Run one approved call as the conversation's user, then continue the conversation if it was the last."""
    return approval.run(tool_call_id)


@task()
def continue_conversation(conversation_id: str) -> bool:
    """Send the decided calls' results to the model and store its answer (one continuation wins the claim)."""
    return engine.continue_turn(conversation_id)


@task()
def run_turn(conversation_id: str, content: str | None, token: str | None = None) -> None:
    """Run a turn whose user message was posted with ``"background": true`` (``token``: the web request's
    claim on the conversation); its events go to the conversation's event stream."""
    engine.run_claimed_turn(conversation_id, content, token)


@task()
def expire_waiting_tool_calls() -> dict[str, Any]:
    """Expire calls waiting past ``APPROVAL_TIMEOUT``, fail approved calls whose worker stopped, and queue
    again the continuations that were lost (``manage.py toolcalling_expire`` does the same from cron)."""
    result = approval.sweep()
    return {
        "expired": [c.pk for c in result.expired],
        "failed": [c.pk for c in result.failed],
        "continued": [str(c.pk) for c in result.continued],
    }
