"""Django's Tasks framework, imported in this one place: ``django.tasks`` from Django 6.0 on, before that the
``django-tasks`` backport (the ``[tasks]`` extra). Importing this module raises ``ImportError`` when neither is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import django

# The stubs describe Django 6's module; on Django 5.2 the backport has the same names, one of them spelt differently.
if TYPE_CHECKING or django.VERSION >= (6, 0):
    from django.tasks import Task, task, task_backends
    from django.tasks.backends.dummy import DummyBackend
    from django.tasks.backends.immediate import ImmediateBackend
    from django.tasks.exceptions import InvalidTaskBackend
else:
    from django_tasks import task, task_backends
    from django_tasks.backends.dummy import DummyBackend
    from django_tasks.backends.immediate import ImmediateBackend
    from django_tasks.base import Task
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend

__all__ = ["DummyBackend", "ImmediateBackend", "InvalidTaskBackend", "Task", "task", "task_backends"]
