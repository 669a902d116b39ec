"""The test site's settings, its URLs plus the baselines of ``bench/asgi_load.py`` (``bench/_bare_view.py``,
``bench/_persisting_view.py``)."""

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "bench._bare_urls"
# A 500 of either side prints its traceback on the server's stderr (the bench reads only the status).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django.request": {"handlers": ["console"], "level": "ERROR"}},
}
