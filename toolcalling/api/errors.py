"""The API's one error shape: ``{"detail": ..., "code": ..., "status": ...}``, mapped here and nowhere else.

Exceptions carry their HTTP status and code (``toolcalling.exceptions``); views raise them and this
module turns them into responses. A turn's error also lists the ``messages`` the turn stored before it
failed. Validation errors keep DRF's 400 shape (Django's own ``ValidationError``, which approval raises for a
decision it refuses, gets it too); DRF's other errors (401, 403, 404, 405, 429) get the
same ``code`` and ``status`` keys. A site's own ``EXCEPTION_HANDLER`` still handles everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from django.core.exceptions import PermissionDenied, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions as drf
from rest_framework import parsers
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings

from ..exceptions import APIError, RequestTooLarge, TurnError, UsageLimitExceeded
from .message_json import messages_json


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Our errors become our body; DRF's (and the site's) handler answers the rest."""
    if isinstance(exc, (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)):
        exc = RequestTooLarge()  # Django's limits on reading a body: its handler would answer an HTML 400 page
    if isinstance(exc, APIError):
        return Response(error_body(exc), status=exc.status_code, headers=_headers(exc))
    # Django's own (get_object_or_404) become DRF's, as DRF's handler would make them, so they get our keys too.
    if isinstance(exc, Http404):
        exc = drf.NotFound(*exc.args)
    elif isinstance(exc, PermissionDenied):
        exc = drf.PermissionDenied(*exc.args)
    elif isinstance(exc, DjangoValidationError):  # approval's check of a decision: DRF's 400 shape, per field
        exc = drf.ValidationError(as_serializer_error(exc))
    # DRF's settings import the dotted path (an IMPORT_STRINGS setting); its stubs also allow the string.
    site_handler = cast(Callable[[Exception, dict[str, Any]], Response | None], api_settings.EXCEPTION_HANDLER)
    response = site_handler(exc, context)
    if response is not None and isinstance(exc, drf.APIException) and not isinstance(exc, drf.ValidationError):
        if isinstance(response.data, dict) and "detail" in response.data:
            response.data.setdefault("code", _code(exc))
            response.data.setdefault("status", None)
    return response


def error_body(exc: APIError) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": str(exc.detail), "code": exc.code, "status": exc.status}
    if isinstance(exc, TurnError):
        body["messages"] = messages_json(exc.messages)
    if isinstance(exc, UsageLimitExceeded):
        body["limit"] = exc.limit
    return body


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with too deeply nested JSON a 400 like any other bad JSON, not a crash."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise drf.ParseError(_("JSON parse error - the JSON is nested too deeply."))


class ErrorResponses:
    """Mixed into every view of the app: its errors have the app's shape whatever the site's handler is, its
    JSON parser refuses deep nesting cleanly, and it manages its own transactions (see ``as_view``)."""

    def get_exception_handler(self) -> Any:
        return exception_handler

    # The two super() calls below reach the view class this is mixed into, which the checker cannot see here.

    def get_parsers(self) -> list[Any]:
        return [JSONParser() if type(p) is parsers.JSONParser else p for p in super().get_parsers()]  # type: ignore[misc]

    @classmethod
    def as_view(cls, *args: Any, **kwargs: Any) -> Any:
        """Outside ``ATOMIC_REQUESTS``: a turn commits as it goes (others see ``running`` and get 409, a
        streamed turn's thread sees its claim), and a task is queued only after its decision is committed,
        so a broker outage can still be answered with 503."""
        return transaction.non_atomic_requests(super().as_view(*args, **kwargs))  # type: ignore[misc]


def _headers(exc: APIError) -> dict[str, str]:
    wait = getattr(exc, "wait", None)
    return {"Retry-After": str(int(wait))} if wait else {}


def _code(exc: drf.APIException) -> str:
    codes = exc.get_codes()
    return codes if isinstance(codes, str) else exc.default_code
