"""What an AI SDK chat request asks for: a new message, the last answer again, or the user's approval answers;
and where in a conversation's stream the turn a reader resumes began.

Only the last message of the body is read: the history comes from the database, never from the client.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import SuspiciousFileOperation
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.utils import validate_file_name
from django.http import Http404
from django.utils.translation import gettext as _
from django.utils.translation import pgettext
from rest_framework import serializers

from .. import approval, streaming
from ..attachments import attachment_settings, sniff, too_large_text
from ..exceptions import AlreadyDecided, AttachmentTooLarge, UnsupportedAttachment
from ..models import Conversation, Message, ToolCall
from ..web import JSONField

SUBMIT = "submit-message"
REGENERATE = "regenerate-message"


class ChatRequestSerializer(serializers.Serializer):
    """The body ``DefaultChatTransport`` posts (``id``, ``messages``, ``trigger``, ``messageId``), plus the
    app's ``background`` (a site adds it with the transport's ``body`` option)."""

    id = serializers.CharField()
    # Read leniently (only the last message matters, and only some of its keys): any list, whatever its items.
    messages = JSONField()
    trigger = serializers.ChoiceField(choices=[SUBMIT, REGENERATE], default=SUBMIT)
    messageId = serializers.CharField(required=False, allow_null=True, allow_blank=True)  # noqa: N815 (the SDK's)
    background = serializers.BooleanField(default=False)

    def validate_messages(self, value: Any) -> list[Any]:
        if not isinstance(value, list):
            text = serializers.ListField.default_error_messages["not_a_list"]
            raise serializers.ValidationError(str(text).format(input_type=type(value).__name__))
        last = value[-1] if value and isinstance(value[-1], dict) else {}
        if last.get("parts") is not None and not isinstance(last["parts"], list):
            raise serializers.ValidationError(_("The last message's parts must be a list."))
        return value


@dataclass(kw_only=True)
class Answer:
    """One approval answer from the browser: the approval's id (the call's id) and what the user said."""

    approval_id: str
    approved: bool
    reason: str = ""


@dataclass(kw_only=True)
class ChatRequest:
    """What the request asks for: ``content`` to post (a new message, or the last one again), or ``answers``."""

    content: str | None = None
    files: list[SimpleUploadedFile] = field(default_factory=list)  # the new message's file parts, decoded
    answers: list[Answer] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # tool call ids (the model's) the client's last message shows
    background: bool = False


def conversation_of(user: Any, chat_id: str) -> Conversation:
    """The user's conversation whose id is the chat id; a 404 for anything else (nothing is stored)."""
    try:
        pk = uuid.UUID(str(chat_id))
    except ValueError:
        raise Http404
    conversation = Conversation.objects.select_related("user").filter(pk=pk, user=user).first()
    if conversation is None:
        raise Http404
    return conversation


def read_request(data: dict[str, Any], conversation: Conversation) -> ChatRequest:
    """The request's intent from its last message (the user's text; or, after ``addToolApprovalResponse``, the
    assistant message whose tool parts carry the answers)."""
    background = bool(data.get("background"))
    if data["trigger"] == REGENERATE:
        last = conversation.messages.filter(role=Message.Role.USER).order_by("-id").first()
        return ChatRequest(content=last.content if last is not None else "", background=background)
    last_message = data["messages"][-1] if data["messages"] and isinstance(data["messages"][-1], dict) else {}
    parts = [p for p in last_message.get("parts") or [] if isinstance(p, dict)]
    if last_message.get("role") != "assistant":
        text = "\n\n".join(str(p.get("text") or "") for p in parts if p.get("type") == "text")
        files = [decoded(p) for p in parts if p.get("type") == "file"]
        return ChatRequest(content=text, files=files, background=background)
    request = ChatRequest(background=background)
    for part in parts:
        if not str(part.get("type", "")).startswith(("tool-", "dynamic-tool")):
            continue
        if part.get("toolCallId"):
            request.shown.append(str(part["toolCallId"]))
        answer = part.get("approval") if part.get("state") == "approval-responded" else None
        if isinstance(answer, dict) and answer.get("id") is not None:
            reason = answer.get("reason")
            request.answers.append(
                Answer(
                    approval_id=str(answer["id"]),
                    approved=answer.get("approved") is True,
                    reason=reason if isinstance(reason, str) else "",
                )  # fmt: skip
            )
    return request


def decoded(part: dict[str, Any]) -> SimpleUploadedFile:
    """A file part's bytes: the SDK sends a file the user picked as a ``data:`` URL. A URL elsewhere is refused,
    never fetched (the server would be asked to read what the browser names); its size is known before decoding."""
    url = part.get("url")
    head, _comma, data = url.partition(",") if isinstance(url, str) else ("", "", "")
    if not head.startswith("data:") or not head.endswith(";base64"):
        raise UnsupportedAttachment(_("A file must come as a data: URL (or be uploaded with POST attachments/)."))
    limit = attachment_settings()["MAX_BYTES"]
    if len(data) * 3 // 4 > limit + 2:  # base64 carries 3 bytes in 4 characters; padding is at most 2 more
        raise AttachmentTooLarge(too_large_text(limit))
    try:
        content = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise UnsupportedAttachment(_("A file's data: URL is not valid base64."))
    return SimpleUploadedFile(file_name(part, content), content)


def file_name(part: dict[str, Any], content: bytes) -> str:
    """The part's ``filename`` (optional in the SDK): without one, a name from the file's type (``attachment.png``);
    a name that names no file (``.``, ``..``) is refused."""
    filename = part.get("filename")
    if not isinstance(filename, str) or not filename:
        kind = sniff(content) or part.get("mediaType")  # the type it is, else the type it claims
        suffix = (mimetypes.guess_extension(kind) if isinstance(kind, str) else None) or ""
        return pgettext("toolcalling unnamed file", "attachment") + suffix
    try:
        validate_file_name(os.path.basename(filename))
    except SuspiciousFileOperation:
        raise UnsupportedAttachment(
            _("A file's name cannot be %(name)r: name the file, or leave the name out.") % {"name": filename}
        )
    return filename


def apply_answers(conversation: Conversation, user: Any, answers: list[Answer]) -> list[ToolCall]:
    """Decide the calls the user confirms themselves (``approver="user"``) as ``POST tool-calls/{id}/approve/``
    and ``reject/`` would, as that user; the calls still waiting among those answered (a staff call's answer
    from the browser decides nothing), to be asked about again. The reasons of the declines are checked first
    (``approval.validate_decision``, as ``reject/`` checks them): one it refuses is a 400, and nothing is decided."""
    for answer in answers:
        if not answer.approved:
            answer.reason = approval.validate_decision(reason=answer.reason)[0]
    still_waiting = []
    for answer in answers:
        call = ToolCall.objects.filter(pk=_int(answer.approval_id), conversation=conversation).first()
        if call is None or call.status != ToolCall.Status.AWAITING_APPROVAL:
            continue
        if call.approver != ToolCall.Approver.USER:
            still_waiting.append(call)
            continue
        try:
            if answer.approved:
                approval.approve(call, user)
            else:
                approval.reject(call, user, answer.reason)
        except AlreadyDecided:
            continue  # decided elsewhere first (another tab, expiry): the stream tells how
    return still_waiting


def moving(conversation_id: Any) -> bool:
    """Whether anything of the conversation will still publish: a turn runs, a decided call runs or waits to,
    or every call is decided and the continuation is due. Not when a call waits for someone's decision."""
    status = Conversation.objects.filter(pk=conversation_id).values_list("status", flat=True).first()
    if status == Conversation.Status.RUNNING:
        return True
    calls = ToolCall.objects.filter(conversation_id=conversation_id)
    if calls.filter(status__in=[ToolCall.Status.APPROVED, ToolCall.Status.RUNNING]).exists():
        return True
    waiting = calls.filter(status=ToolCall.Status.AWAITING_APPROVAL).exists()
    return status == Conversation.Status.AWAITING_APPROVAL and not waiting


def awaiting_staff(conversation_id: Any) -> bool:
    """Whether the conversation waits for staff only: calls await a decision and none is the user's own or the
    browser's (those the page answers itself, in a request of its own)."""
    waiting = ToolCall.objects.filter(conversation_id=conversation_id, status=ToolCall.Status.AWAITING_APPROVAL)
    return waiting.exists() and not waiting.exclude(approver=ToolCall.Approver.STAFF).exists()


def turn_start(conversation_id: Any) -> int:
    """The number after which the current turn's events begin: the last ``turn_end`` kept, else 0 (a reader
    that resumes gets the whole turn again, as the SDK's ``resumeStream`` expects a replay)."""
    backend = streaming.get_store().backend_for(str(conversation_id))
    after, start = 0, 0
    while batch := backend.read(str(conversation_id), after, 0):
        for event in batch:
            if event.type == "turn_end":
                start = event.seq
        after = batch[-1].seq
    return start


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return -1
