"""``POST tool-calls/{id}/result/``: the result of a client tool's call, sent by the conversation's owner's client
(a call waiting for it is listed by ``GET tool-calls/?status=awaiting_approval`` with ``approver: "client"``)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import approval
from ..approval import can_approve
from ..models import ToolCall
from ..web import ErrorResponses, JSONField, ToolCallSerializer
from .serializers import ApprovalToolCallSerializer


class ClientResultInputSerializer(serializers.Serializer):
    """Either ``result`` (any JSON value the tool's ``result_schema`` accepts) or ``error`` (the client's run
    failed: the model is told why)."""

    result = JSONField(required=False, allow_null=True, help_text="What the tool gave in the browser.")
    error = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=True, help_text="Why the tool failed in the browser."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("result" in attrs) == ("error" in attrs):
            raise serializers.ValidationError(_("Send either a result or an error."), code="invalid")
        return attrs


class ClientResultView(ErrorResponses, APIView):
    """Answer a waiting client tool's call with its ``result`` (or the ``error`` it met): the owner of the
    conversation only (another user's call is a 404 as everywhere, a staff member's look at it a 403), a call
    that waits for it only (a 409 ``already_decided`` once it is answered, cancelled, expired or stopped), and a
    result its tool's ``result_schema`` accepts (else a 400 naming ``result``). The conversation goes on."""

    permission_classes = [IsAuthenticated]

    def post(self, request: Request, pk: int) -> Response:
        data = ClientResultInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        calls = ToolCall.objects.select_related("conversation__user")
        if not can_approve(request.user):
            calls = calls.filter(conversation__user=request.user)  # type: ignore[misc]  # IsAuthenticated
        call = get_object_or_404(calls, pk=pk)
        fields = data.validated_data
        approval.answer_client_call(call, request.user, result=fields.get("result"), error=fields.get("error"))
        call.refresh_from_db()
        serializer = ApprovalToolCallSerializer if can_approve(request.user) else ToolCallSerializer
        return Response(serializer(call, context={"request": request}).data)
