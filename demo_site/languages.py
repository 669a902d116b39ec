"""The demo's language: the one picked with the switcher, else the one `make demo` started in, else the browser's."""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.conf import settings
from django.http import HttpRequest
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

# The languages the demo ships (the app's catalogs); English is the source language.
LANGUAGES = [("en", "English"), ("de", "Deutsch"), ("ko", "한국어")]


def started_in(environ: Mapping[str, str] = os.environ) -> str | None:
    """``DEMO_LANGUAGE``, or the language of ``LANG`` (``ko_KR.UTF-8`` is ``ko``) when the demo ships it and it is
    not English: an English ``LANG`` is what most machines have, so it leaves the choice to the browser."""
    for name in ("DEMO_LANGUAGE", "LANG"):
        code = environ.get(name, "").split(".")[0].split("_")[0].split("-")[0].lower()
        if code and code != "en" and code in dict(LANGUAGES):
            return code
    return None


class DemoLocaleMiddleware(LocaleMiddleware):
    """Django's LocaleMiddleware, except that ``LANG=ko make demo`` shows Korean whatever the browser asks, until
    the visitor picks a language with the switcher (Django's ``set_language`` keeps it in a cookie)."""

    def process_request(self, request: HttpRequest) -> None:
        if settings.DEMO_LANGUAGE and settings.LANGUAGE_COOKIE_NAME not in request.COOKIES:
            translation.activate(settings.DEMO_LANGUAGE)
            request.LANGUAGE_CODE = translation.get_language()
            return
        super().process_request(request)
