"""The demo site's Celery app: configured from the ``CELERY_*`` Django settings, tasks found per installed app."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "demo_site.settings")

app = Celery("demo_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Finds toolcalling/tasks.py, which runs approved tool calls.
app.autodiscover_tasks()
