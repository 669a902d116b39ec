"""The desk's list at a glance: each waiting call's arguments and preview readable in its row, and Approve / Reject
on the row itself, decided through the list's own actions (so with their permission, four-eyes and LogEntry)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import pgettext, pgettext_lazy

from .. import approval
from ..models import ToolCall
from ._actions import approve_selected, reject_selected

if TYPE_CHECKING:
    from ._tool_calls import ToolCallAdmin

VALUE_LIMIT = 300  # characters of one argument or preview value shown in a row; the call's page shows all
NOTHING = "—"


def list_display(modeladmin: ToolCallAdmin, request: HttpRequest, *, deciding: bool) -> list[Any]:
    """The columns: on the desk (``deciding``) the preview and the decision buttons take the place of the status
    and "decided by", which say nothing about a call still waiting."""
    user = request.user
    filters = urlencode({"_changelist_filters": request.GET.urlencode()}) if request.GET else ""

    @admin.display(description=pgettext_lazy("toolcalling admin", "preview"))
    def preview(call: ToolCall) -> str:
        if call.status != ToolCall.Status.AWAITING_APPROVAL or not approval.may_decide(call, user):
            return NOTHING
        return preview_cell(approval.preview(call))

    @admin.display(description=pgettext_lazy("toolcalling admin", "decision"))
    def decision(call: ToolCall) -> str:
        url = reverse(f"{modeladmin.admin_site.name}:toolcalling_toolcall_decide", args=[call.pk])
        return decision_cell(call, user, f"{url}?{filters}" if filters else url)

    columns: list[str | Callable[[ToolCall], str]] = ["id", "name"]
    columns += [arguments, preview] if deciding else ["status", arguments]
    columns += ["requesting_user", "conversation_link", "age"]
    columns += [decision] if deciding else ["decided_by"]
    return columns


@admin.display(description=pgettext_lazy("toolcalling admin", "arguments"))
def arguments(call: ToolCall) -> str:
    if not isinstance(call.arguments, dict):
        return format_html("<code>{}</code>", short(call.arguments))
    # By name, as the change form shows them: PostgreSQL's jsonb keeps no order of its own.
    return facts(dict(sorted(call.arguments.items())))


def preview_cell(found: approval.Preview | None) -> str:
    if found is None:
        return NOTHING
    if found.error:
        return format_html(
            '<span class="tc-preview-error">{}</span>', _("The preview failed: %(error)s") % {"error": found.error}
        )
    if isinstance(found.value, dict):
        return facts(found.value)
    return format_html('<span class="tc-preview-text">{}</span>', short(found.value))


def decision_cell(call: ToolCall, user: Any, url: str) -> str:
    """Approve and Reject for a call this user may decide; the four-eyes rule's reason on a disabled Approve."""
    if call.status != ToolCall.Status.AWAITING_APPROVAL or not approval.may_decide(call, user):
        return NOTHING
    refused = approval.refusal(call, user, approving=True)
    approve = format_html(
        '<button type="submit" class="button default" name="_approve" formaction="{}"{}>{}</button>',
        url,
        format_html(' disabled title="{}"', refused.detail) if refused is not None else "",
        pgettext("toolcalling admin", "Approve"),
    )
    reject = format_html(
        '<button type="submit" class="button" name="_reject" formaction="{}">{}</button>',
        url,
        pgettext("toolcalling admin", "Reject"),
    )
    return format_html('<div class="tc-row-decide">{}{}</div>', approve, reject)


def facts(values: dict[str, Any]) -> SafeString:
    """A dict as labelled lines, one fact a line, long values cut short."""
    if not values:
        return format_html("{}", NOTHING)
    rows = format_html_join("", "<dt>{}</dt><dd>{}</dd>", ((key, short(value)) for key, value in values.items()))
    return format_html('<dl class="tc-facts">{}</dl>', rows)


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def decide_row(modeladmin: ToolCallAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """A row's Approve or Reject: the list's own actions on that one call; Reject asks for the reason first."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not modeladmin.has_approve_permission(request):
        raise PermissionDenied
    try:
        queryset = modeladmin.get_queryset(request).filter(pk=int(unquote(object_id)))
    except ValueError:
        raise Http404
    if not queryset.exists():
        raise Http404
    if "_approve" in request.POST:
        approve_selected(modeladmin, request, queryset)
    else:
        asked = reject_selected(modeladmin, request, queryset)  # the reason page posts back here
        if asked is not None:
            return asked
    return HttpResponseRedirect(modeladmin.desk_url(request))
