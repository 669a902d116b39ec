"""The API's one error shape: ``{"detail": ..., "code": ..., "status": ...}``, mapped here and nowhere else.

Exceptions carry their HTTP status and code (``toolcalling.exceptions``); views raise them and this
module turns them into responses. A turn's error also lists the ``messages`` the turn stored before it
failed. Validation errors keep DRF's 400 shape; DRF's other errors (401, 403, 404, 405, 429) get the
same ``code`` and ``status`` keys. A site's own ``EXCEPTION_HANDLER`` still handles everything else.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.settings import api_settings

from ..exceptions import APIError, TurnError
from .serializers import MessageSerializer


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Our errors become our body; DRF's (and the site's) handler answers the rest."""
    if isinstance(exc, APIError):
        return Response(error_body(exc), status=exc.status_code, headers=_headers(exc))
    # Django's own (get_object_or_404) become DRF's, as DRF's handler would make them, so they get our keys too.
    if isinstance(exc, Http404):
        exc = drf.NotFound(*exc.args)
    elif isinstance(exc, PermissionDenied):
        exc = drf.PermissionDenied(*exc.args)
    response = api_settings.EXCEPTION_HANDLER(exc, context)
    if response is not None and isinstance(exc, drf.APIException) and not isinstance(exc, drf.ValidationError):
        if isinstance(response.data, dict) and "detail" in response.data:
            response.data.setdefault("code", _code(exc))
            response.data.setdefault("status", None)
    return response


def error_body(exc: APIError) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": str(exc.detail), "code": exc.code, "status": exc.status}
    if isinstance(exc, TurnError):
        body["messages"] = MessageSerializer(exc.messages, many=True).data
    return body


class ErrorResponses:
    """Mixed into every view of the app, so its errors have the app's shape whatever the site's handler is."""

    def get_exception_handler(self) -> Any:
        return exception_handler


def _headers(exc: APIError) -> dict[str, str]:
    wait = getattr(exc, "wait", None)
    return {"Retry-After": str(int(wait))} if wait else {}


def _code(exc: drf.APIException) -> str:
    codes = exc.get_codes()
    return codes if isinstance(codes, str) else exc.default_code
