"""The test site's URLs plus ``bench/bare/turn/``, the bare view of ``bench/asgi_load.py``."""

from django.urls import path

from bench._bare_view import bare_turn
from tests.urls import urlpatterns as site_urlpatterns

urlpatterns = [*site_urlpatterns, path("bench/bare/turn/", bare_turn)]
