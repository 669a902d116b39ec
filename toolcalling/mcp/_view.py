"""``mcp/<assistant_id>/``: the MCP Streamable HTTP endpoint, stateless, behind the site's DRF authentication.

One POST carries one JSON-RPC message (or a batch) and gets one JSON answer; nothing is kept between
requests, so any web worker can answer (no session id, no sticky sessions) under WSGI and ASGI alike.
There is no server-to-client stream: ``GET`` and ``DELETE`` are 405, as the transport allows.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from django.http.request import RawPostDataException
from django.utils.translation import gettext as _
from django.utils.translation import pgettext
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from ..assistant import Assistant
from ..exceptions import NotRegistered
from ..web import ErrorResponses
from ._protocol import PARSE_ERROR, MCPEndpoint, Reply

# The challenge of a 401 when no configured authentication class names one (session authentication alone).
FALLBACK_CHALLENGE = 'Session realm="api"'

# Bodies the transport never sends; Django reads them as forms (a CSRF check does), so they are refused unread.
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


class MCPView(ErrorResponses, APIView):
    """Serves the tools of one assistant to the authenticated user over MCP (see ``toolcalling.mcp``)."""

    permission_classes = [IsAuthenticated]
    renderer_classes = [JSONRenderer]

    def get_authenticate_header(self, request: Request) -> str:
        """Unauthenticated is a 401 with ``WWW-Authenticate`` whatever the order of the authentication classes
        (DRF would answer 403 when the first one, such as session authentication, names no challenge)."""
        for authenticator in self.get_authenticators():
            header = authenticator.authenticate_header(request)
            if header:
                return header
        return FALLBACK_CHALLENGE

    def post(self, request: Request, assistant_id: str) -> HttpResponse:
        assistant = self.get_assistant(assistant_id)
        endpoint = MCPEndpoint(assistant, request.user)
        body = self.body_of(request)
        if body is None:
            return self.answer(endpoint.refuse(PARSE_ERROR, "Parse error: the body must be JSON.", status=415))
        payload = endpoint.read(body)
        if isinstance(payload, Reply):
            return self.answer(payload)
        # DRF's throttles counted this request once; each further call of a batch counts as a request of its own.
        for _request in range(endpoint.requests_in(payload) - 1):
            self.check_throttles(request)
        return self.answer(endpoint.handle(payload, protocol_version=request.headers.get("MCP-Protocol-Version")))

    @staticmethod
    def body_of(request: Request) -> bytes | None:
        """The raw body; ``None`` for a form (MCP sends JSON), whose stream a CSRF check may have read already."""
        if request.content_type.split(";")[0].strip().lower() in FORM_TYPES:
            return None
        try:
            return request.body
        except RawPostDataException:
            return None

    @staticmethod
    def answer(reply: Reply) -> HttpResponse:
        if reply.body is None:
            return HttpResponse(status=202)  # only notifications: accepted, nothing to answer
        body = json.dumps(reply.body, ensure_ascii=False, separators=(",", ":"))
        return HttpResponse(body, status=reply.status, content_type="application/json")

    def get_assistant(self, assistant_id: str) -> Assistant:
        try:
            assistant = Assistant.get(assistant_id)
        except NotRegistered:
            raise NotFound(pgettext("toolcalling", "No assistant %(assistant)s.") % {"assistant": repr(assistant_id)})
        if not assistant.has_permission(self.request.user):
            raise PermissionDenied(_("You may not use this assistant."))
        return assistant

    def get_view_description(self, html: bool = False) -> Any:
        return "MCP Streamable HTTP endpoint"
