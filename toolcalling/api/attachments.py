"""Attachment endpoints: ``POST attachments/`` (multipart ``file``) stores an upload; its ``url`` serves the
file to its owner (and to staff who may view its conversation), a 404 to anyone else."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..attachments import AttachmentUploadHandler, attachment_storage, may_read, store_unsent
from ..models import Attachment
from ..web import AttachmentSerializer, ErrorResponses
from .throttling import UploadRateThrottle


class Uploads:
    """Mixed into views that take files: the app's upload handler reads every multipart body, from its first
    read on (DRF's CSRF check reads the form for session users), so a refused file is refused as it arrives."""

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        if request.content_type == "multipart/form-data":
            request.upload_handlers = [AttachmentUploadHandler(request)]
        return super().initialize_request(request, *args, **kwargs)  # type: ignore[misc]


class AttachmentUploadView(ErrorResponses, Uploads, APIView):
    """Store one upload (field ``file``), owned by the user; a message sends it by its id. Throttled per user by
    ``UploadRateThrottle`` (scope ``toolcalling_upload``), and bounded by what the user keeps unsent
    (``ATTACHMENTS["MAX_UNSENT"]``, ``["MAX_UNSENT_BYTES"]``: 413 ``upload_quota_exceeded``)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]

    def get_throttles(self) -> list[Any]:
        return [*super().get_throttles(), UploadRateThrottle()]

    def post(self, request: Request) -> Response:
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": [_("Attach a file in the multipart field 'file'.")]})
        attachment = store_unsent(upload, request.user)
        return Response(AttachmentSerializer(attachment).data, status=status.HTTP_201_CREATED)


class AttachmentContentView(ErrorResponses, APIView):
    """An attachment's bytes: images inline with their real type, anything else as a download; never sniffed
    by the browser. Anyone but its owner and staff who may view its conversation gets a 404."""

    permission_classes = [AllowAny]  # who may read is decided per file; everyone else sees nothing exists

    def get(self, request: Request, pk: Any) -> FileResponse:
        attachment = get_object_or_404(Attachment, pk=pk)
        if not may_read(request.user, attachment):
            raise Http404
        response = FileResponse(
            attachment_storage().open(attachment.storage_name, "rb"),
            content_type=attachment.content_type,
            as_attachment=not attachment.is_image,
            filename=attachment.name,
        )
        if attachment.is_image:
            response["Content-Disposition"] = response["Content-Disposition"].replace("attachment", "inline", 1)
        response["X-Content-Type-Options"] = "nosniff"
        # Even if a browser took it for a page, it could run nothing and reach nothing.
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, max-age=3600"
        return response
