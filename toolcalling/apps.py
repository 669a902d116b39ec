"""App configs: the simple one registers checks; the default one also autodiscovers tools and assistants."""

import sys

from django.apps import AppConfig
from django.utils.translation import pgettext_lazy


class SimpleToolcallingConfig(AppConfig):
    """Use ``toolcalling.apps.SimpleToolcallingConfig`` to register tools and assistants by hand."""

    name = "toolcalling"
    verbose_name = pgettext_lazy("toolcalling", "Tool calling")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import (
            _worker,
            attachments,  # noqa: F401  (deletes an attachment's file with its row)
            checks,  # noqa: F401  (registers the system checks)
            tasks,  # noqa: F401  (registers the shared tasks with every Celery app, whatever it discovers)
        )

        _worker.started_by_command(sys.argv)  # a task worker (db_worker) warns now when it cannot reach the model

        try:
            from .api import openapi  # noqa: F401  (describe the API in the site's schema)
        except ImportError as exc:  # the optional [openapi] extra is not installed: no schema, same API
            if (exc.name or "").partition(".")[0] != "drf_spectacular":
                raise


class ToolcallingConfig(SimpleToolcallingConfig):
    """The default: imports every installed app's ``tools.py`` and ``assistants.py``, like the admin."""

    default = True

    def ready(self) -> None:
        from . import autodiscover

        super().ready()
        autodiscover()
