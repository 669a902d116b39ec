"""What a worker process (Celery's, or a task backend's such as ``db_worker``) says when it lacks the settings a turn
needs: a warning as it starts, and a hint on every model error it meets, so a conversation that fails there names
the worker's own settings instead of looking like the model's fault."""

from __future__ import annotations

import logging
import os

from django.utils.translation import gettext as _

logger = logging.getLogger("toolcalling")

# Management commands that run a task backend's worker (django-tasks-db's); checked as the process starts.
WORKER_COMMANDS = ("db_worker",)

_worker: str | None = None  # what kind of worker this process is, once it said so


def model_settings_problem() -> str | None:
    """What this process lacks to reach the model, in words, or ``None`` (the same test as check W001: an
    offline model, a client factory, a key or an endpoint of its own is enough)."""
    from .conf import toolcalling_settings as s

    try:
        if s.OFFLINE_MODEL or s.CLIENT_FACTORY:
            return None
        if s.API == "anthropic":
            key_variable = "ANTHROPIC_API_KEY"
            key = s.user_settings.get("API_KEY") or os.environ.get(key_variable)
            endpoint = s.user_settings.get("BASE_URL") or os.environ.get("ANTHROPIC_BASE_URL")
        else:
            key_variable, key, endpoint = "OPENAI_API_KEY", s.API_KEY, s.BASE_URL
    except Exception:  # invalid settings: check_settings reports them, and nothing here can say more
        return None
    if key or endpoint:
        return None
    return _("TOOLCALLING has no API_KEY and no BASE_URL here, and %(variable)s is not set in its environment") % {
        "variable": key_variable
    }


def started(worker: str) -> None:
    """This process is a worker (``worker`` says which, e.g. "Celery worker"): warn now if it cannot reach the
    model, and from now on add the hint to the model errors it meets."""
    global _worker
    _worker = worker
    problem = model_settings_problem()
    if problem is not None:
        logger.warning(
            "This %s cannot reach the model: %s. Approved calls still run on it, but every continuation and "
            "background turn it runs will fail. Start it with the same TOOLCALLING settings and environment as the "
            "web process.",
            worker,
            problem,
        )


def started_by_command(argv: list[str]) -> None:
    """Call ``started`` when this process is a task worker command (``manage.py db_worker``)."""
    if _worker is None and len(argv) > 1 and argv[1] in WORKER_COMMANDS:
        started(f"task worker ({argv[1]})")


def hint() -> str:
    """The sentence to add to a model error met in a worker that lacks the model settings; empty otherwise."""
    if _worker is None:
        return ""
    problem = model_settings_problem()
    if problem is None:
        return ""
    return " " + _(
        "This ran on a %(worker)s whose settings cannot reach the model: %(problem)s. Start the worker with the "
        "same TOOLCALLING settings and environment as the web process."
    ) % {"worker": _worker, "problem": problem}
