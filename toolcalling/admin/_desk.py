"""The approval desk: what a staff member needs to decide one call, the count of waiting calls in the admin's
app list, and reports of decisions that say what really happened."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import messages
from django.contrib.admin import AdminSite
from django.http import HttpRequest
from django.utils.timesince import timesince
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, npgettext

from .. import approval
from ..exceptions import NotRegistered
from ..models import Message, ToolCall
from ..toolkit import assistants

TAIL_LENGTH = 8  # messages of the conversation shown up to the call
TEXT_LIMIT = 2000  # characters of one message shown on the desk


def desk_context(request: HttpRequest, call: ToolCall) -> dict[str, Any]:
    """Who asked, with which assistant and words, the tool's description, the preview and who may decide."""
    conversation = call.conversation
    waiting = call.status == ToolCall.Status.AWAITING_APPROVAL
    unknown = call.status == ToolCall.Status.OUTCOME_UNKNOWN
    approve_refusal = approval.refusal(call, request.user, approving=True)
    may_reject = approval.may_decide(call, request.user)
    return {
        "call": call,
        "waiting": waiting,
        "waiting_for": timesince(call.created_at) if waiting else "",
        "for_user": call.approver == ToolCall.Approver.USER,
        "requester": conversation.user,
        "assistant_name": _assistant_name(conversation.assistant_id),
        "tool_description": _tool_description(call),
        "tail": conversation_tail(call),
        # Computed only for someone who decides, and only while it matters: it shows the current state.
        "preview": approval.preview(call) if waiting and may_reject else None,
        "may_approve": waiting and approve_refusal is None,
        "may_reject": waiting and may_reject,
        "refusal": str(approve_refusal.detail) if waiting and approve_refusal is not None else "",
        # A call whose process stopped while it ran: what is known of that run, and who may say what happened.
        "unknown": unknown,
        "may_settle": unknown and may_reject,
        "may_retry": unknown and approve_refusal is None,
        "settle_refusal": str(approve_refusal.detail) if unknown and approve_refusal is not None else "",
    }


def conversation_tail(call: ToolCall) -> list[dict[str, Any]]:
    """The last messages up to the one that asked for ``call``: what the user said that led to it."""
    rows = (
        Message.objects.filter(conversation_id=call.conversation_id, id__lte=call.message_id)
        .exclude(role=Message.Role.SYSTEM)
        .prefetch_related("tool_calls")
        .order_by("-id")[:TAIL_LENGTH]
    )
    tail = []
    for message in reversed(list(rows)):
        content = message.content
        tail.append(
            {
                "role": message.role,
                "role_label": message.get_role_display(),
                "content": content if len(content) <= TEXT_LIMIT else content[:TEXT_LIMIT] + "…",
                "calls": [c.name for c in message.tool_calls.all()],
                "is_this_call": message.pk == call.message_id,
            }
        )
    return tail


def report_approved(calls: Iterable[ToolCall]) -> list[tuple[int, str]]:
    """Messages for approved calls that say where each is now: handed to a worker (queued, or running
    already), or run in this request (as with ``CELERY_TASK_ALWAYS_EAGER``) with its outcome. Never
    "a worker runs it" for a call that ran already."""
    queued: list[ToolCall] = []
    ran: list[ToolCall] = []
    for call in calls:
        call.refresh_from_db(fields=["status", "error"])
        on_worker = call.status in (ToolCall.Status.APPROVED, ToolCall.Status.RUNNING)
        (queued if on_worker else ran).append(call)
    out = []
    if queued:
        text = ngettext(
            "Approved %(count)d tool call; a worker runs it.",
            "Approved %(count)d tool calls; a worker runs them.",
            len(queued),
        )
        out.append((messages.SUCCESS, text % {"count": len(queued)}))
    for call in ran:
        values = {"id": call.pk, "name": call.name, "status": call.get_status_display(), "error": call.error}
        if call.status == ToolCall.Status.FAILED:
            out.append((messages.WARNING, _("Approved #%(id)s %(name)s; it ran and failed: %(error)s") % values))
        else:
            out.append((messages.SUCCESS, _("Approved #%(id)s %(name)s; it ran: %(status)s.") % values))
    return out


def count_waiting_in_app_list(site: AdminSite) -> None:
    """Make ``site``'s app list — the index, the app's page and the sidebar — say how many tool calls wait
    for a staff decision, to the staff who may decide them.

    Django builds those lists in ``AdminSite.get_app_list`` and offers no per-model hook, and template
    overrides would lose to (or replace) a site's own; so the site's ``get_app_list`` is wrapped once,
    whatever it is, and only the tool call entry's name gains the count.
    """
    if getattr(site, "toolcalling_counts_waiting", False):
        return
    build = site.get_app_list

    def get_app_list(request: HttpRequest, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        app_list = build(request, *args, **kwargs)
        entry = next(
            (m for app in app_list for m in app.get("models", ()) if m.get("model") is ToolCall),
            None,
        )
        if entry is not None and approval.can_approve(request.user):
            # One indexed COUNT per page: the index builds the list twice (its body and the sidebar). It is kept
            # on the request, an attribute HttpRequest does not declare.
            if not hasattr(request, "toolcalling_waiting"):
                request.toolcalling_waiting = approval.waiting_calls().count()  # type: ignore[attr-defined]
            count = request.toolcalling_waiting  # type: ignore[attr-defined]
            if count:
                text = npgettext(
                    "toolcalling admin", "%(name)s (%(count)d waiting)", "%(name)s (%(count)d waiting)", count
                )
                entry["name"] = text % {"name": entry["name"], "count": count}
        return app_list

    # The wrapper replaces the site's method on this one instance, and marks the site as wrapped.
    site.get_app_list = get_app_list  # type: ignore[method-assign]
    site.toolcalling_counts_waiting = True  # type: ignore[attr-defined]


def _assistant_name(assistant_id: str) -> str:
    try:
        return assistants.get(assistant_id).name or assistant_id
    except NotRegistered:
        return _("%(id)s (no longer registered)") % {"id": assistant_id}


def _tool_description(call: ToolCall) -> str:
    try:
        return approval.tool_for(call).description
    except NotRegistered:
        # Not among the assistant's declared tools: removed since, or offered by an MCP server.
        return _("(no description: the tool is not among the assistant's declared tools)")
