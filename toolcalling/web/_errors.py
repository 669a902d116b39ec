"""The one error shape of every endpoint (the REST API's, the frontends', MCP's): ``{"detail": ..., "code": ...,
"status": ...}``, mapped here and nowhere else.

The app's errors carry a code and no HTTP (``toolcalling.exceptions``); views raise them, and this module gives
each code its HTTP status (``HTTP_STATUS``, the one table of them) and turns the errors into responses. A turn's
error also lists the ``messages`` the turn stored before it failed. Validation errors keep DRF's 400 shape
(Django's own ``ValidationError``, which approval raises for a decision it refuses, gets it too); DRF's other
errors (401, 403, 404, 405, 429) get the same ``code`` and ``status`` keys. A database that cannot be reached
(Django's ``OperationalError`` and ``InterfaceError``: a server restarting, a connection cut or refused) is a 503
``database_unavailable`` with ``Retry-After``, logged, not a 500. A site's own ``EXCEPTION_HANDLER`` still handles
everything else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from django.core.exceptions import PermissionDenied, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError, transaction
from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions as drf
from rest_framework import parsers
from rest_framework import status as http
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings

from ..exceptions import APIError, DatabaseUnavailable, RequestTooLarge, TurnError, UsageLimitExceeded
from ._messages import messages_json

logger = logging.getLogger("toolcalling")

# The HTTP status of each error code (docs/reference/errors.md lists them for clients).
HTTP_STATUS: dict[str, int] = {
    "error": http.HTTP_400_BAD_REQUEST,
    # A conversation's state
    "conversation_busy": http.HTTP_409_CONFLICT,
    "nothing_waiting": http.HTTP_409_CONFLICT,
    "assistant_unavailable": http.HTTP_409_CONFLICT,
    "not_running": http.HTTP_409_CONFLICT,
    # Decisions
    "already_decided": http.HTTP_409_CONFLICT,
    "permission_denied": http.HTTP_403_FORBIDDEN,
    "requester_may_not_approve": http.HTTP_403_FORBIDDEN,
    # Services out of reach
    "queue_unavailable": http.HTTP_503_SERVICE_UNAVAILABLE,
    "events_unavailable": http.HTTP_503_SERVICE_UNAVAILABLE,
    "database_unavailable": http.HTTP_503_SERVICE_UNAVAILABLE,
    # A turn's end
    "turn_failed": http.HTTP_422_UNPROCESSABLE_ENTITY,
    "model_error": http.HTTP_502_BAD_GATEWAY,
    "turn_interrupted": http.HTTP_409_CONFLICT,
    "turn_not_stored": http.HTTP_503_SERVICE_UNAVAILABLE,
    "model_call_limit_exceeded": http.HTTP_422_UNPROCESSABLE_ENTITY,
    "usage_limit_exceeded": http.HTTP_429_TOO_MANY_REQUESTS,
    "unpriced_model": http.HTTP_503_SERVICE_UNAVAILABLE,
    "tool_error": http.HTTP_422_UNPROCESSABLE_ENTITY,
    "tool_call_limit_exceeded": http.HTTP_422_UNPROCESSABLE_ENTITY,
    "output_validation_failed": http.HTTP_422_UNPROCESSABLE_ENTITY,
    # Attachments and bodies
    "unsupported_attachment": http.HTTP_400_BAD_REQUEST,
    "request_too_large": http.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    "attachment_too_large": http.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    "upload_quota_exceeded": http.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    "too_many_attachments": http.HTTP_400_BAD_REQUEST,
    "unknown_attachment": http.HTTP_400_BAD_REQUEST,
    # Optional extras not installed
    "ag_ui_not_installed": http.HTTP_501_NOT_IMPLEMENTED,
    "mcp_not_installed": http.HTTP_501_NOT_IMPLEMENTED,
}


def http_status(error: APIError | type[APIError]) -> int:
    """The HTTP status of an error (or error class): its code's in ``HTTP_STATUS``; a code the table lacks (a
    site's own subclass) takes its nearest base class's."""
    cls = error if isinstance(error, type) else type(error)
    for base in cls.__mro__:
        code = getattr(base, "default_code", None)
        if code in HTTP_STATUS:
            return HTTP_STATUS[code]
    return HTTP_STATUS[APIError.default_code]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Our errors become our body; DRF's (and the site's) handler answers the rest."""
    if isinstance(exc, (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)):
        exc = RequestTooLarge()  # Django's limits on reading a body: its handler would answer an HTML 400 page
    elif isinstance(exc, (OperationalError, InterfaceError)):
        # The database went away (a restart, a connection cut or refused) before the request's writes were
        # committed: nothing of it is stored (``MessagePost`` says otherwise when its message was).
        unavailable = DatabaseUnavailable()
        unavailable.__cause__ = exc
        exc = unavailable
    if isinstance(exc, DatabaseUnavailable):  # not a bug, but the operators' to see
        logger.error("the database could not be reached: %s", exc.__cause__, exc_info=exc)
    if isinstance(exc, APIError):
        return Response(error_body(exc), status=http_status(exc), headers=_headers(exc))
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
