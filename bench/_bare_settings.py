"""The test site's settings, its URLs plus the bare view of ``bench/asgi_load.py`` (``bench/_bare_view.py``)."""

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "bench._bare_urls"
