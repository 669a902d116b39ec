"""Queueing the app's background jobs by name, so the engine and approval never import the tasks' modules: on the
site's Celery app (``TOOLCALLING["TASKS"] = "celery"``, ``toolcalling.tasks``) or through Django's Tasks framework
(``"django"``, ``toolcalling.django_tasks``), whichever the setting picks."""

from __future__ import annotations

import logging
from typing import Any

from celery import current_app
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils.module_loading import import_string

from ..conf import TASKS_FRAMEWORK_INSTALL, toolcalling_settings
from ..exceptions import TaskQueueUnavailable
from ..storage import write_db

logger = logging.getLogger("toolcalling")

RUN_APPROVED_TOOL_CALL = "toolcalling.run_approved_tool_call"
CONTINUE_CONVERSATION = "toolcalling.continue_conversation"
RUN_TURN = "toolcalling.run_turn"

# Where a task of each name is a Django Task: looked up by name when queued, as Celery's registry is, so the engine
# below does not import the module of the tasks above it.
DJANGO_TASKS_MODULE = "toolcalling.django_tasks"


def enqueue(name: str, *args: Any) -> None:
    """Queue the task ``name`` (one of the ``toolcalling.tasks``) on the runner ``TOOLCALLING["TASKS"]`` names.

    Raises ``TaskQueueUnavailable`` when the broker (or the task backend) cannot be reached. With
    ``CELERY_TASK_ALWAYS_EAGER``, or Django's immediate task backend, the task runs here and now, and its own
    errors propagate as they are.
    """
    if toolcalling_settings.TASKS == "django":
        enqueue_django_task(name, *args)
        return
    task = current_app.tasks[name]
    if task.app.conf.task_always_eager:
        task.delay(*args)
        return
    try:
        task.delay(*args)
    except Exception as exc:
        logger.exception("the task %s could not be queued", name)
        raise TaskQueueUnavailable() from exc


def enqueue_django_task(name: str, *args: Any) -> None:
    """Queue ``name`` as a Django Task on the site's task backend, once the transaction around it commits.

    The callers queue after their decision commits already; inside an ``atomic`` block (``ATOMIC_REQUESTS``, a
    site's own) the task is queued when that block commits, so a worker never looks for rows it cannot see yet,
    and a rolled-back decision queues nothing.
    """
    try:
        task = import_string(f"{DJANGO_TASKS_MODULE}.{name.removeprefix('toolcalling.')}")
    except ImportError as exc:
        raise ImproperlyConfigured(f'TOOLCALLING["TASKS"] = "django" needs {TASKS_FRAMEWORK_INSTALL}.') from exc
    db = write_db()
    if transaction.get_connection(db).in_atomic_block:
        transaction.on_commit(lambda: _send(task, name, args), using=db, robust=True)
    else:
        _send(task, name, args)


def _send(task: Any, name: str, args: tuple[Any, ...]) -> None:
    from .._task_framework import ImmediateBackend

    if isinstance(task.get_backend(), ImmediateBackend):
        task.enqueue(*args)  # runs here and now, like eager Celery
        return
    try:
        task.enqueue(*args)
    except Exception as exc:
        logger.exception("the task %s could not be queued", name)
        raise TaskQueueUnavailable() from exc
