"""The system checks of Django's Tasks framework as the app's runner (``TOOLCALLING["TASKS"] = "django"``): the
framework must be installed, and the site's default task backend must be one that runs tasks on a worker."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext

WORKER_HINT = gettext_lazy(
    'Set TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}} (the django-tasks-db package, its app '
    '"django_tasks_db" in INSTALLED_APPS, then manage.py migrate), and run a worker: manage.py db_worker.'
)


def uses_django_tasks() -> bool:
    """Whether the site picked Django's Tasks framework (an invalid setting is reported by check_settings)."""
    from .conf import toolcalling_settings as s

    try:
        return bool(s.TASKS == "django")
    except ImproperlyConfigured:
        return False


@checks.register("toolcalling")
def check_task_backend(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Under ``TASKS = "django"``: the framework is there, and the default backend runs tasks on a worker."""
    if not uses_django_tasks():
        return []
    try:
        from . import _task_framework as framework
    except ImportError:
        from .conf import TASKS_FRAMEWORK_INSTALL

        return [
            checks.Error(
                _('TOOLCALLING["TASKS"] is "django", but Django\'s Tasks framework is not installed.'),
                hint=pgettext("toolcalling", "Install %(what)s.") % {"what": TASKS_FRAMEWORK_INSTALL},
                id="toolcalling.E010",
            )
        ]
    try:
        backend = framework.task_backends["default"]
    except (framework.InvalidTaskBackend, ImportError) as exc:
        return [
            checks.Error(
                _(
                    'TOOLCALLING["TASKS"] is "django", but the site\'s default task backend cannot be loaded '
                    "(%(error)s), so approved calls, continuations and background turns cannot be queued."
                )
                % {"error": exc},
                hint=str(WORKER_HINT),
                id="toolcalling.E011",
            )
        ]
    if isinstance(backend, framework.DummyBackend):
        return [
            checks.Error(
                _(
                    'TOOLCALLING["TASKS"] is "django", but the default task backend is the dummy one, which '
                    "keeps tasks and never runs them: approved calls would never run and conversations waiting "
                    "for them would never go on."
                ),
                hint=str(WORKER_HINT),
                id="toolcalling.E011",
            )
        ]
    if isinstance(backend, framework.ImmediateBackend):
        return [
            checks.Warning(
                _(
                    'TOOLCALLING["TASKS"] is "django", but the default task backend is the immediate one (Django\'s '
                    "default when settings.TASKS is not set): approved calls, continuations and background turns "
                    "run inside the web request that queues them, and a background message waits for its turn."
                ),
                hint=str(WORKER_HINT),
                id="toolcalling.W009",
            )
        ]
    return []
