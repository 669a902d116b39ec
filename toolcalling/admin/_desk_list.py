"""The cells of the desk's list, for a waiting call to be read at a glance in its row: its arguments and preview
as labelled lines, each value cut short, and the row's Approve and Reject buttons (with the four-eyes rule's
reason on a disabled Approve)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import pgettext, pgettext_lazy

from .. import approval
from ..models import ToolCall

VALUE_LIMIT = 300  # characters of one argument or preview value shown in a row; the call's page shows all
NOTHING = "—"


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
