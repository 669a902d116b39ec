"""The system check that finds the app's URLs included but answered by another pattern listed before them."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core import checks
from django.urls import NoReverseMatch, Resolver404, resolve, reverse
from django.utils.translation import gettext as _

# A route without arguments and one with: a catch-all shadows both, a narrower pattern perhaps only one.
PROBES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("toolcalling:assistant-list", {}),
    ("toolcalling:conversation-messages", {"pk": uuid.UUID(int=0)}),
)


@checks.register("toolcalling", checks.Tags.urls)
def check_urls_reachable(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Reverse a route of ours, resolve the path it gives, and see whether our view answers it: a CMS's catch-all
    (Wagtail's ``wagtail_urls``, django CMS's ``cms.urls``) listed first would answer every API URL with a 404."""
    if not getattr(settings, "ROOT_URLCONF", None):
        return []
    for name, kwargs_ in PROBES:
        try:
            path = reverse(name, kwargs=kwargs_)
        except NoReverseMatch:
            return []  # the site does not include toolcalling.urls: nothing to reach
        except Exception:  # noqa: BLE001 - a URLconf that fails to import is Django's own check's to report
            return []
        try:
            match = resolve(path)
        except Resolver404:
            continue  # reversible but not resolvable (e.g. a language prefix not active now): no verdict
        if "toolcalling" in match.app_names and match.url_name == name.partition(":")[2]:
            continue
        route = match.route or path
        return [
            checks.Warning(
                _(
                    "The app's URLs are included, but %(path)s is answered by another URL pattern listed before "
                    "them: %(route)s (view %(view)s). The REST API and the MCP endpoint cannot be reached."
                )
                % {"path": path, "route": repr(route), "view": match._func_path},
                hint=_(
                    'List path("api/toolcalling/", include("toolcalling.urls")) before that pattern in your '
                    "URLconf, e.g. urlpatterns = [path(...), *urlpatterns] at its end. A catch-all route (Wagtail's "
                    "wagtail_urls, django CMS's cms.urls) must stay the last pattern."
                ),
                id="toolcalling.W008",
            )
        ]
    return []
