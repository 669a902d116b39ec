"""Telling staff that a tool call waits for them: absolute links that open from a mail client, the people who
may decide, and the text of the message with the call's preview. For a receiver of ``approval_requested`` and of
``tool_call_outcome_unknown`` (a call whose process died while it ran, waiting for someone to say what happened)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils import formats, timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from . import approval
from .conf import toolcalling_settings
from .exceptions import NotRegistered
from .models import ToolCall
from .toolkit import assistants


@dataclass(frozen=True, kw_only=True)
class ApprovalNotice:
    """What to tell approvers about one waiting call."""

    subject: str
    body: str
    """Plain text: who asked for what, the arguments, the preview, and the link."""
    url: str
    """The call's page in the admin; absolute when ``SITE_URL`` or ``django.contrib.sites`` says where the site is."""
    preview: approval.Preview | None


def site_url() -> str | None:
    """Where the site is, e.g. ``https://shop.example.com``: ``TOOLCALLING["SITE_URL"]``, else the current
    ``Site`` of ``django.contrib.sites`` (as https), else ``None``."""
    if toolcalling_settings.SITE_URL:
        return toolcalling_settings.SITE_URL.rstrip("/")
    if apps.is_installed("django.contrib.sites"):
        from django.contrib.sites.models import Site

        try:
            return f"https://{Site.objects.get_current().domain}"
        except (ImproperlyConfigured, Site.DoesNotExist):  # no SITE_ID, or its row is missing
            return None
    return None


def absolute_url(path: str) -> str:
    """``path`` (e.g. from ``reverse()``) as a link that works outside the site: a mail client, a chat app.
    Stays relative when the site's address is unknown (system check ``toolcalling.W002`` says so)."""
    base = site_url()
    return f"{base}{path}" if base and path.startswith("/") else path


def approval_url(tool_call: ToolCall, *, admin_site: str = "admin") -> str:
    """The absolute link to the call's page in the admin, where an approver reads it and decides."""
    return absolute_url(reverse(f"{admin_site}:toolcalling_toolcall_change", args=[tool_call.pk]))


def approvers(tool_call: ToolCall) -> QuerySet[Any]:
    """The active users with an e-mail address who may approve this call: holders of
    ``toolcalling.approve_toolcall`` and superusers, without the requester unless ``APPROVER_MAY_BE_REQUESTER``.
    None for a call the conversation's own user confirms."""
    users = get_user_model().objects.all()
    if tool_call.approver != ToolCall.Approver.STAFF:
        return users.none()
    app_label, codename = approval.APPROVE_PERMISSION.split(".")
    holds = Q(user_permissions__codename=codename, user_permissions__content_type__app_label=app_label)
    in_group = Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label=app_label)
    users = users.filter(holds | in_group | Q(is_superuser=True), is_active=True).exclude(email="")
    if not toolcalling_settings.APPROVER_MAY_BE_REQUESTER:
        users = users.exclude(pk=tool_call.conversation.user_id)
    return users.distinct()


def approval_notice(tool_call: ToolCall, *, admin_site: str = "admin", language: str | None = None) -> ApprovalNotice:
    """The subject, text and link of a message asking approvers to decide ``tool_call``, with its preview
    computed now. In ``language`` (default: the active one).

    For a call whose outcome is unknown (``outcome_unknown``) the message says so, with when and where it ran,
    and asks them to say what happened instead."""
    with translation.override(language or translation.get_language()):
        url = approval_url(tool_call, admin_site=admin_site)
        found = approval.preview(tool_call)
        conversation = tool_call.conversation
        unknown = tool_call.status == ToolCall.Status.OUTCOME_UNKNOWN
        arguments = json.dumps(tool_call.arguments, indent=2, ensure_ascii=False, sort_keys=True)
        parts = [
            _("%(user)s asked the assistant “%(assistant)s” to run %(tool)s.")
            % {
                "user": conversation.user,
                "assistant": _assistant_name(conversation.assistant_id),
                "tool": tool_call.name,
            },
        ]
        if unknown:
            parts[0] += " " + _unknown_run(tool_call)
        parts.append(pgettext("toolcalling notification", "Arguments:") + "\n" + arguments)
        if found is not None:
            parts.append(pgettext("toolcalling notification", "Preview:") + "\n" + found.as_text())
        if unknown:
            parts.append(
                _("Say what happened here (it took effect, it did not, or run it again): %(url)s") % {"url": url}
            )
            subject = pgettext("toolcalling notification", "Outcome unknown: %(tool)s") % {"tool": tool_call.name}
        else:
            parts.append(_("Approve or reject it here: %(url)s") % {"url": url})
            subject = pgettext("toolcalling notification", "Approval needed: %(tool)s") % {"tool": tool_call.name}
        return ApprovalNotice(subject=subject, body="\n\n".join(parts) + "\n", url=url, preview=found)


def _unknown_run(tool_call: ToolCall) -> str:
    """What is known of the run of a call whose outcome is unknown: that its process stopped, when and where."""
    text = _("Its process stopped while it ran, before its result was stored, so whether it took effect is unknown.")
    if tool_call.started_at is not None:
        started = tool_call.started_at
        started = timezone.localtime(started) if timezone.is_aware(started) else started  # USE_TZ = False
        text += " " + _("It started at %(started)s on %(worker)s.") % {
            "started": formats.date_format(started, "DATETIME_FORMAT"),
            "worker": tool_call.worker or "?",
        }
    return text


def _assistant_name(assistant_id: str) -> str:
    try:
        return assistants.get(assistant_id).name or assistant_id
    except NotRegistered:
        return assistant_id
