"""``GET usage/``: the user's own usage in the current periods and the limits that apply to them."""

from __future__ import annotations

from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import usage
from ..toolkit import assistants
from ..web import ErrorResponses


class UsageView(ErrorResponses, APIView):
    """What the user used today and this month, and each limit on their turns: its maximum, what is used of it,
    and when it resets. Limits on a whole assistant or the site show those totals, never who used them."""

    permission_classes = [IsAuthenticated]

    def get(self, request: Request) -> Response:
        usable = [cls() for cls in assistants.all()]
        usable = [assistant for assistant in usable if assistant.has_permission(request.user)]
        return Response(usage.report(request.user, usable))
