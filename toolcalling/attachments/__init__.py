"""Attachments: images and PDFs users send with a message, checked by their bytes, kept in the site's storage
under generated names, shown to the model as content parts and to tools as ``ctx.attachments``."""

from ._files import AttachedFile, conversation_files, may_read
from ._linking import attach, carried, sendable
from ._parts import IMAGE_TOKENS, data_url, document_tokens, request_files, stub_text
from ._quota import store_unsent
from ._sniffing import sniff
from ._storing import AttachmentUploadHandler, attachment_settings, attachment_storage, check, store, too_large_text
from ._sweeping import sweep_unattached

__all__ = [
    "IMAGE_TOKENS",
    "AttachedFile",
    "AttachmentUploadHandler",
    "attach",
    "carried",
    "attachment_settings",
    "attachment_storage",
    "check",
    "conversation_files",
    "data_url",
    "document_tokens",
    "may_read",
    "request_files",
    "sendable",
    "sniff",
    "store",
    "store_unsent",
    "stub_text",
    "sweep_unattached",
    "too_large_text",
]
