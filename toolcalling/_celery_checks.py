"""The system checks of the Celery wiring: gated tools need a Celery app that reaches a broker, and workers that
close the connections an approved run leaves behind."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _

if TYPE_CHECKING:
    from celery import Celery


def _site_celery_app() -> Celery | None:
    """The Celery app this process sends tasks with from any thread, or None when the site's app is not loaded.

    That is Celery's default app: the site's app becomes it when it is created with ``DJANGO_SETTINGS_MODULE`` set,
    as the tutorial's yoursite/celery.py does (Celery's Django fixup makes it the default for every thread). It is
    read through ``celery.app.default_app``, a proxy of that app or of None, and not ``celery.current_app``: that one
    would create Celery's fallback app (broker ``amqp://localhost``) as the default when there is none, and the
    Django fixup of a site's app created later would then leave the fallback in place.
    """
    from celery.app import default_app

    if not default_app:  # the proxy of None: no app was made the default
        return None
    # Celery's own fallback, made by a use of current_app before the site's app: named "default", without fix-ups.
    # celery-types does not declare the fixups attribute that Celery.__init__ sets.
    if default_app.main == "default" and not default_app.fixups:  # type: ignore[attr-defined]
        return None
    return default_app


def _workers_close_persistent_connections(app: Celery) -> bool:
    """Whether the site wants persistent connections that Celery's Django fixup would close on every task
    (it keeps them only with ``CELERY_DB_REUSE_MAX``, which it reads from the app's configuration)."""
    from django.conf import settings

    persistent = settings.DATABASES.get("default", {}).get("CONN_MAX_AGE", 0) != 0  # None: unlimited
    return persistent and not app.conf.get("CELERY_DB_REUSE_MAX")


def _gated_tools() -> list[str]:
    from .toolkit import tools

    return [t.name for t in tools.all() if t.requires_approval]


@checks.register("toolcalling")
def check_celery_wiring(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Approval-gated tools need a Celery app (with a broker, or eager); a worker's events need a shared Redis.
    A site that runs its background work with Django's Tasks framework (``TASKS = "django"``) needs no Celery."""
    from ._tasks_checks import uses_django_tasks
    from .conf import toolcalling_settings as s

    if uses_django_tasks():
        return []

    app = _site_celery_app()
    eager = bool(app is not None and app.conf.task_always_eager)
    messages: list[checks.CheckMessage] = []
    gated = _gated_tools()
    if gated and app is None:
        messages.append(
            checks.Error(
                _(
                    "Approval-gated tools exist (%(tools)s), but no Celery app is loaded, so approved calls would "
                    "be sent to Celery's default broker (amqp://localhost) and approval answers "
                    '"the task queue could not be reached".'
                )
                % {"tools": ", ".join(gated)},
                hint=_(
                    "Create yoursite/celery.py (see the tutorial, docs/tutorial.md: it sets DJANGO_SETTINGS_MODULE to "
                    "the same module as manage.py and calls "
                    "app.config_from_object('django.conf:settings', namespace='CELERY')) and load it in "
                    "yoursite/__init__.py: from .celery import app as celery_app. Without a broker, also set "
                    "CELERY_TASK_ALWAYS_EAGER = True."
                ),
                id="toolcalling.E004",
            )
        )
    elif gated and app is not None and not eager and not app.conf.broker_url:
        messages.append(
            checks.Warning(
                _(
                    "Approval-gated tools exist (%(tools)s), but the Celery app %(app)r has no broker configured "
                    "and does not run tasks eagerly, so approved calls go to Celery's default broker "
                    "(amqp://localhost)."
                )
                % {"tools": ", ".join(gated), "app": app.main},
                hint=_(
                    'Set CELERY_BROKER_URL (e.g. "redis://localhost:6379/0") and run a worker (celery -A yoursite '
                    "worker), or set CELERY_TASK_ALWAYS_EAGER = True to run them in the web process."
                ),
                id="toolcalling.W003",
            )
        )
    if app is not None and not eager and _workers_close_persistent_connections(app):
        messages.append(
            checks.Warning(
                _(
                    "CONN_MAX_AGE asks for persistent database connections, but Celery's workers close every "
                    "connection around every task unless CELERY_DB_REUSE_MAX is set, so each approved call and "
                    "background turn first opens a new connection."
                ),
                hint=_(
                    "Set CELERY_DB_REUSE_MAX = 1000 and close old connections around the tasks a worker runs, as "
                    "the tutorial's yoursite/celery.py does (task_prerun and task_postrun receivers that call "
                    "django.db.close_old_connections())."
                ),
                id="toolcalling.W005",
            )
        )
    try:
        shared_events = s.EVENTS_REDIS_URL
    except ImproperlyConfigured:
        return messages  # reported by check_settings
    if app is not None and not eager and not shared_events:
        messages.append(
            checks.Warning(
                _(
                    "Celery tasks run on a worker, but TOOLCALLING has no EVENTS_REDIS_URL, so the worker's events "
                    "(an approved call running, the answer that follows it, background turns) stay in the worker's "
                    "process and the chat page waits for them forever."
                ),
                hint=_(
                    'Set TOOLCALLING["EVENTS_REDIS_URL"] (or the REDIS_URL environment variable) to a Redis that '
                    'the web and worker processes share, e.g. "redis://localhost:6379/0".'
                ),
                id="toolcalling.W004",
            )
        )
    return messages
