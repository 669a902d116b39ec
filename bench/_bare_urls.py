"""The test site's URLs plus the two baselines of ``bench/asgi_load.py``: ``bench/bare/turn/``, the bare view, and
``bench/persisting/turn/<conversation id>/``, the persisting view."""

from django.urls import path

from bench._bare_view import bare_turn
from bench._persisting_view import persisting_turn
from tests.urls import urlpatterns as site_urlpatterns

urlpatterns = [
    *site_urlpatterns,
    path("bench/bare/turn/", bare_turn),
    path("bench/persisting/turn/<uuid:conversation_id>/", persisting_turn),
]
