"""The demo site's Celery app: configured from the ``CELERY_*`` Django settings, tasks found per installed app."""

import os

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "demo_site.settings")

app = Celery("demo_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Finds toolcalling/tasks.py, which runs approved tool calls.
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def close_old_database_connections(task: Task, **kwargs: object) -> None:
    """With ``CELERY_DB_REUSE_MAX`` set, connections live on a worker as in a request (``CONN_MAX_AGE``).
    An eager task (no ``REDIS_URL``) runs inside the approving request, whose connection it leaves alone."""
    if not task.request.is_eager:
        close_old_connections()
