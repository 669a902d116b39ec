"""The OpenAPI description of attachments: the multipart bodies of an upload and of a message with files, the
file download, and their errors (imported by ``openapi``, so only with drf-spectacular)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema

from ..conf import ATTACHMENT_TYPES
from ..web import AttachmentSerializer
from .openapi import ViewSchema
from .openapi_bodies import TYPES_TEXT, AttachmentUploadSerializer, errors
from .throttling import DEFAULT_UPLOAD_RATE

BINARY = {"type": "string", "format": "binary"}
REFUSED = {
    "e400": f"unsupported_attachment: the bytes are not one of the allowed types ({TYPES_TEXT}); nothing stored.",
    "e413": "attachment_too_large: over ATTACHMENTS['MAX_BYTES'], refused while it was read; upload_quota_exceeded: "
    "the user's uploads not sent yet would exceed ATTACHMENTS['MAX_UNSENT'] files or ['MAX_UNSENT_BYTES'] bytes. "
    "Nothing stored.",
    "e429": f"throttled (scope toolcalling_upload, default {DEFAULT_UPLOAD_RATE}, with Retry-After); nothing stored.",
}


class AttachmentUploadViewSchema(ViewSchema):
    target_class = "toolcalling.api.attachments.AttachmentUploadView"

    def described(self) -> dict[str, Any]:
        return dict(
            post=extend_schema(
                summary="Upload a file to attach",
                description="Multipart field `file`. The upload belongs to the user; a message sends it by its "
                "`id` (`attachments`). Its `url` serves it to the owner only.",
                request={"multipart/form-data": AttachmentUploadSerializer},
                responses={201: AttachmentSerializer, **errors(400, 413, 429, **REFUSED)},
            )
        )


class AttachmentContentViewSchema(ViewSchema):
    target_class = "toolcalling.api.attachments.AttachmentContentView"

    def described(self) -> dict[str, Any]:
        return dict(
            get=extend_schema(
                summary="An attachment's file",
                description="To its owner and to staff who may view its conversation in the admin; a 404 to "
                "anyone else. Images inline, other files as a download; `X-Content-Type-Options: nosniff`.",
                responses={
                    **{
                        (200, kind): OpenApiResponse(BINARY, description="The bytes, with their real type.")
                        for kind in ATTACHMENT_TYPES
                    },
                    **{(s, "application/json"): r for s, r in errors(404).items()},
                },
            )
        )
