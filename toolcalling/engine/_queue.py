"""Queueing the app's Celery tasks by name, so the engine and approval never import ``toolcalling.tasks``."""

from __future__ import annotations

import logging
from typing import Any

from celery import current_app

from ..exceptions import TaskQueueUnavailable

logger = logging.getLogger("toolcalling")

RUN_APPROVED_TOOL_CALL = "toolcalling.run_approved_tool_call"
CONTINUE_CONVERSATION = "toolcalling.continue_conversation"
RUN_TURN = "toolcalling.run_turn"


def enqueue(name: str, *args: Any) -> None:
    """Queue the task ``name`` (one of the ``toolcalling.tasks``) on the site's Celery app.

    Raises ``TaskQueueUnavailable`` when the broker cannot be reached. With ``CELERY_TASK_ALWAYS_EAGER``
    the task runs here and now, and its own errors propagate as they are.
    """
    task = current_app.tasks[name]
    if task.app.conf.task_always_eager:
        task.delay(*args)
        return
    try:
        task.delay(*args)
    except Exception as exc:
        logger.exception("the task %s could not be queued", name)
        raise TaskQueueUnavailable() from exc
