"""A task backend of the test site for Django's Tasks (``TOOLCALLING["TASKS"] = "django"``) that cannot be reached,
as a backend whose database or service is down."""

from typing import Any

from django.db import OperationalError

from toolcalling._task_framework import DummyBackend


class UnreachableBackend(DummyBackend):
    """Every enqueue fails, as the database backend's does when its database is down."""

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        raise OperationalError("the task backend's database is down")
