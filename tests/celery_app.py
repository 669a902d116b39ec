"""The test site's Celery app, as a site would write it; the approval tests start a real worker with it."""

import os

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

from tests import mutation

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

app = Celery("tests")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The demo shop is installed too, and importing demo_site creates its Celery app. Only the thread that
# creates an app makes it current; other threads (the live server's, a test's) bind shared tasks to
# the default app, which must be this one, not the demo's (eager, with its own broker connections).
app.set_default()


@task_prerun.connect
@task_postrun.connect
def close_old_database_connections(task: Task, **kwargs: object) -> None:
    """Connections live as in a request (``CONN_MAX_AGE``, ``CONN_HEALTH_CHECKS``); see CELERY_DB_REUSE_MAX.
    An eager task runs inside its caller's request or test, whose connection it must leave alone.

    Celery's signals are global: demo_site/celery.py, imported too, connects the same receivers, and closing
    old connections twice is harmless (tests/approval/test_worker_connections.py needs both gone to fail)."""
    if not task.request.is_eager:
        close_old_connections()


if os.environ.get("TOOLCALLING_TEST_WORKER") and mutation.collecting():
    task_postrun.connect(mutation.report_worker_hits, weak=False)
