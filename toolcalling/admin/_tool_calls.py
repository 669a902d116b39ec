"""The admin of tool calls, where staff decide: its list opens on the desk (the calls waiting for them,
longest-waiting first, each row with its preview and its own Approve and Reject), its actions approve the selected
calls or reject them with a reason, and the change page of a waiting call shows who asked and why, the preview,
editable arguments, Approve and Reject; beside them, each tool's statistics."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.forms.fields import InvalidJSONInput
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.timesince import timesince
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext, pgettext_lazy

from .. import approval
from ..approval import can_approve
from ..exceptions import AlreadyDecided, DecisionNotAllowed, InvalidArguments, TaskQueueUnavailable
from ..models import ToolCall
from ..toolkit import nested_too_deeply, storable
from ._conversations import pretty_json
from ._desk import count_waiting_in_app_list, desk_context, report_approved
from ._desk_list import NOTHING, arguments, decision_cell, preview_cell
from ._selection import CheckedSelectionAdmin
from ._stats import tool_stats

if TYPE_CHECKING:
    from django_stubs_ext import FieldOpts, FieldsetSpec, StrOrPromise


class PrettyJSONField(forms.JSONField):
    """A JSON form field shown indented, so an approver can read and edit arguments."""

    # Django's field catches only ValueError; text nested past what the parser takes is invalid JSON too.

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except RecursionError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid", params={"value": "…"})

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            value = super().bound_data(data, initial)
        except RecursionError:
            return InvalidJSONInput(data)  # shown again as typed, as Django shows any other bad JSON
        # Too deep to be arguments (and to indent again): shown as typed, with the error under it.
        return InvalidJSONInput(data) if nested_too_deeply(value) else value

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, str):  # the text typed in, when the form is shown again with an error
            return value
        # A lone surrogate ("\ud800" is valid JSON) cannot be sent in a UTF-8 page: it is shown as U+FFFD.
        return storable(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


class ToolCallArgumentsForm(forms.ModelForm):
    """The change form of a waiting call: only its arguments, checked against the tool's signature."""

    arguments = PrettyJSONField(
        label=pgettext_lazy("toolcalling admin", "Arguments"),
        widget=forms.Textarea(attrs={"rows": 12, "cols": 80, "style": "font-family:monospace"}),
        help_text=gettext_lazy("Edit before approving; the model is told the arguments were changed."),
    )

    class Meta:
        model = ToolCall
        fields = ["arguments"]

    def clean_arguments(self) -> dict[str, Any]:
        if self.instance.status != ToolCall.Status.AWAITING_APPROVAL:
            raise forms.ValidationError(_("This call is no longer waiting; its arguments cannot change."))
        try:
            return approval.validate_arguments(self.instance, self.cleaned_data["arguments"])
        except InvalidArguments as exc:
            raise forms.ValidationError(str(exc))


class DeskFilter(admin.SimpleListFilter):
    """Status, opening on the calls that wait for a staff decision; "All" shows every call."""

    title = pgettext_lazy("toolcalling admin", "status")
    parameter_name = "status"
    ALL = "all"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [*ToolCall.Status.choices, (self.ALL, pgettext_lazy("toolcalling admin", "All"))]

    def choices(self, changelist: Any) -> Any:
        entries = list(super().choices(changelist))
        entries[0]["display"] = _("Awaiting a staff decision")  # the default, where Django puts "All"
        return entries

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        value = self.value()
        if value is None:
            return queryset.filter(status=ToolCall.Status.AWAITING_APPROVAL, approver=ToolCall.Approver.STAFF)
        return queryset if value == self.ALL else queryset.filter(status=value)


def on_desk(request: HttpRequest) -> bool:
    """Whether the list shows the desk: the calls waiting for staff (the default)."""
    return "status" not in request.GET


FIELDSETS_DECIDED: list[tuple[StrOrPromise, tuple[str, ...]]] = [
    (
        pgettext_lazy("toolcalling admin", "Outcome"),
        ("status", "result", "error", "decided_by", "decided_at", "decision_reason"),
    ),
    (pgettext_lazy("toolcalling admin", "Run"), ("started_at", "worker", "finished_at", "duration_ms")),
]
FIELDSETS_ALWAYS: list[tuple[StrOrPromise, tuple[str, ...]]] = [
    (gettext_lazy("Where it comes from"), ("conversation", "message", "requires_approval", "approver", "created_at")),
]
INTERNAL: tuple[StrOrPromise, FieldOpts] = (
    pgettext_lazy("toolcalling admin", "Internal"),
    {"classes": ["collapse"], "fields": ("call_id", "raw_arguments", "extras")},
)


@admin.register(ToolCall)
class ToolCallAdmin(CheckedSelectionAdmin):
    """The desk: waiting calls with their tool, arguments, requester, conversation and age; decided on there."""

    list_display = [
        "id",
        "name",
        "status",
        "arguments_display",
        "requesting_user",
        "conversation_link",
        "age",
        "decided_by",
    ]
    list_filter = [
        DeskFilter,
        "approver",
        "name",
        "requires_approval",
        "conversation__assistant_id",
        ("conversation__user", admin.RelatedOnlyFieldListFilter),
        "created_at",
    ]
    search_fields = ["name", "call_id", "conversation__user__username"]
    list_select_related = ["conversation__user", "decided_by"]
    actions = ["approve_selected", "reject_selected"]
    form = ToolCallArgumentsForm
    change_form_template = "admin/toolcalling/toolcall/change_form.html"
    readonly_fields = [
        "conversation",
        "message",
        "call_id",
        "name",
        "arguments_display",
        "original_arguments_display",
        "raw_arguments",
        "extras",
        "status",
        "result",
        "error",
        "requires_approval",
        "approver",
        "decided_by",
        "decided_at",
        "decision_reason",
        "created_at",
        "started_at",
        "worker",
        "finished_at",
        "duration_ms",
    ]

    def __init__(self, model: type[ToolCall], admin_site: admin.AdminSite) -> None:
        super().__init__(model, admin_site)
        count_waiting_in_app_list(admin_site)

    # Columns --------------------------------------------------------------------------------------------

    @admin.display(description=pgettext_lazy("toolcalling admin", "user"), ordering="conversation__user")
    def requesting_user(self, obj: ToolCall) -> Any:
        return obj.conversation.user

    @admin.display(description=pgettext_lazy("toolcalling admin", "conversation"))
    def conversation_link(self, obj: ToolCall) -> str:
        url = reverse(f"{self.admin_site.name}:toolcalling_conversation_change", args=[obj.conversation_id])
        return format_html("<a href='{}'>{}</a>", url, str(obj.conversation)[:40])

    @admin.display(description=pgettext_lazy("toolcalling admin", "arguments"))
    def arguments_display(self, obj: ToolCall) -> str:
        return pretty_json(obj.arguments)

    @admin.display(description=gettext_lazy("original arguments (from the model)"))
    def original_arguments_display(self, obj: ToolCall) -> str:
        return pretty_json(obj.original_arguments) if obj.original_arguments is not None else "-"

    @admin.display(description=pgettext_lazy("toolcalling admin", "age"), ordering="created_at")
    def age(self, obj: ToolCall) -> str:
        return timesince(obj.created_at)

    # The list -------------------------------------------------------------------------------------------

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        """On the desk (the calls waiting) the preview and the decision buttons take the place of the status and
        "decided by", which say nothing about a call still waiting."""
        deciding = on_desk(request) or request.GET.get("status") == ToolCall.Status.AWAITING_APPROVAL
        user = request.user
        filters = urlencode({"_changelist_filters": request.GET.urlencode()}) if request.GET else ""

        @admin.display(description=pgettext_lazy("toolcalling admin", "preview"))
        def preview(call: ToolCall) -> str:
            if call.status != ToolCall.Status.AWAITING_APPROVAL or not approval.may_decide(call, user):
                return NOTHING
            return preview_cell(approval.preview(call))

        @admin.display(description=pgettext_lazy("toolcalling admin", "decision"))
        def decision(call: ToolCall) -> str:
            url = reverse(f"{self.admin_site.name}:toolcalling_toolcall_decide", args=[call.pk])
            return decision_cell(call, user, f"{url}?{filters}" if filters else url)

        columns: list[str | Callable[[ToolCall], str]] = ["id", "name"]
        columns += [arguments, preview] if deciding else ["status", arguments]
        columns += ["requesting_user", "conversation_link", "age"]
        columns += [decision] if deciding else ["decided_by"]
        return columns

    def get_ordering(self, request: HttpRequest) -> tuple[str, ...]:
        # The desk serves the longest-waiting call first; the other views show the latest calls first.
        waiting = on_desk(request) or request.GET.get("status") == ToolCall.Status.AWAITING_APPROVAL
        return ("created_at", "id") if waiting else ("-created_at", "-id")

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if on_desk(request):
            extra_context = {"title": _("Tool calls awaiting a staff decision"), **(extra_context or {})}
            unknown = ToolCall.objects.filter(status=ToolCall.Status.OUTCOME_UNKNOWN, approver=ToolCall.Approver.STAFF)
            count = unknown.count() if can_approve(request.user) else 0
            if count:
                url = f"{request.path}?status={ToolCall.Status.OUTCOME_UNKNOWN}"
                text = ngettext(
                    "%(count)d call's outcome is unknown: its process stopped while it ran. Say what happened.",
                    "%(count)d calls' outcomes are unknown: their process stopped while they ran. Say what happened.",
                    count,
                ) % {"count": count}
                extra_context["outcome_unknown"] = {"text": text, "url": url}
        return super().changelist_view(request, extra_context)

    # Who may do what: only someone who may decide a waiting call changes it; nobody adds or deletes
    # calls here, since they are the audit trail of what the assistant did.

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return can_approve(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_approve(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is None:
            return can_approve(request.user)
        return obj.status == ToolCall.Status.AWAITING_APPROVAL and approval.may_decide(
            obj, request.user, approving=True
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # Actions on the list: approve the selected calls, or reject them with a reason -----------------------

    @admin.action(description=gettext_lazy("Approve selected tool calls"), permissions=("approve",))
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[ToolCall]) -> None:
        """Approve each waiting call; workers run them and continue the conversations."""
        approved, skipped = [], []
        for call in queryset.select_related("conversation"):
            try:
                approval.approve(call, request.user)
            except (AlreadyDecided, DecisionNotAllowed, TaskQueueUnavailable) as exc:
                skipped.append(f"#{call.pk} {call.name}: {exc}")
            else:
                approved.append(call)
        for level, text in report_approved(approved):
            self.message_user(request, text, level)
        self._report(request, [], skipped)

    @admin.action(description=gettext_lazy("Reject selected tool calls"), permissions=("approve",))
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[ToolCall]) -> TemplateResponse | None:
        """Ask for a reason on an intermediate page (like ``delete_selected``), then reject each waiting call."""
        if request.POST.get("post") != "yes":
            opts = self.model._meta
            context = {
                **self.admin_site.each_context(request),
                "title": pgettext_lazy("toolcalling admin", "Reject tool calls"),
                "calls": queryset,
                "rows": [
                    (call, json.dumps(call.arguments, indent=2, ensure_ascii=False))
                    for call in queryset.select_related("conversation__user")
                ],
                "opts": opts,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "media": self.media,
            }
            request.current_app = self.admin_site.name
            return TemplateResponse(
                request, f"admin/{opts.app_label}/{opts.model_name}/reject_selected_confirmation.html", context
            )
        try:  # the one check of a decision's reason, as the API's and the chat's declines have
            reason = approval.validate_decision(reason=request.POST.get("reason", ""))[0]
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return None
        rejected, skipped = [], []
        for call in queryset.select_related("conversation"):
            try:
                approval.reject(call, request.user, reason)
            except (AlreadyDecided, DecisionNotAllowed) as exc:
                skipped.append(f"#{call.pk} {call.name}: {exc}")
            else:
                rejected.append(call)
        text = ngettext(
            "Rejected %(count)d tool call; the model is told why.",
            "Rejected %(count)d tool calls; the model is told why.",
            len(rejected),
        )
        self._report(request, rejected, skipped, text)
        return None

    def _report(self, request: HttpRequest, done: list[ToolCall], skipped: list[str], text: str = "") -> None:
        if done:
            self.message_user(request, text % {"count": len(done)}, messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                pgettext_lazy("toolcalling admin", "Skipped: %(calls)s") % {"calls": "; ".join(skipped)},
                messages.WARNING,
            )

    # The change page ------------------------------------------------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> FieldsetSpec:
        if obj is None:
            return [(None, {"fields": ("arguments_display",)})]
        editable = self.has_change_permission(request, obj)
        top = ["name", "arguments" if editable else "arguments_display"]
        if obj.original_arguments is not None:
            top.append("original_arguments_display")
        waiting = obj.status == ToolCall.Status.AWAITING_APPROVAL
        rest = FIELDSETS_ALWAYS if waiting else [*FIELDSETS_DECIDED, *FIELDSETS_ALWAYS]
        fieldsets: list[tuple[StrOrPromise | None, FieldOpts]] = [(None, {"fields": tuple(top)})]
        fieldsets += [(title, {"fields": fields}) for title, fields in rest]
        return [*fieldsets, INTERNAL]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return list(self.readonly_fields)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        call = self.get_object(request, unquote(object_id))
        if call is None or not self.has_view_permission(request, call):
            return super().change_view(request, object_id, form_url, extra_context)
        if request.method == "POST" and ("_approve" in request.POST or "_reject" in request.POST):
            decided = self.decide(request, call)
            if decided is not None:
                return decided
        settling = [outcome for outcome in approval.SETTLEMENTS if f"_settle_{outcome}" in request.POST]
        if request.method == "POST" and settling:
            return self.settle(request, call, settling[0])
        extra_context = {**(extra_context or {}), "desk": desk_context(request, call)}
        return super().change_view(request, object_id, form_url, extra_context)

    def decide(self, request: HttpRequest, call: ToolCall) -> HttpResponse | None:
        """Approve (with the arguments as shown in the form) or reject with the reason typed in, then go
        back to the desk; ``None`` to show the form again with its errors."""
        try:
            if "_reject" in request.POST:
                approval.reject(call, request.user, request.POST.get("reject_reason", ""))
                self.message_user(request, _("Rejected #%(id)s %(name)s; the model is told why.") % self._name(call))
            else:
                arguments = None
                if "arguments" in request.POST and self.has_change_permission(request, call):
                    # A copy: validating a ModelForm writes the new value onto its instance.
                    form = self.get_form(request, call)(request.POST, instance=copy.copy(call))
                    if not form.is_valid():
                        return None  # the change view validates again and shows the errors
                    if "arguments" in form.changed_data:
                        arguments = form.cleaned_data["arguments"]
                approval.approve(call, request.user, arguments)
                for level, text in report_approved([call]):
                    self.message_user(request, text, level)
        except (AlreadyDecided, DecisionNotAllowed, InvalidArguments, TaskQueueUnavailable) as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        except ValidationError as exc:  # a reason the one check of a decision refuses: nothing was decided
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        return HttpResponseRedirect(self.desk_url(request))

    def settle(self, request: HttpRequest, call: ToolCall, outcome: str) -> HttpResponse:
        """Say what became of a call whose process stopped while it ran (with the result typed in), then go back
        to the list; an error (decided already, not allowed, the queue down) shows the page again with it."""
        try:
            approval.settle(call, request.user, outcome, request.POST.get("settle_result", ""))
        except (AlreadyDecided, DecisionNotAllowed, TaskQueueUnavailable) as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        done = {
            "succeeded": _("#%(id)s %(name)s is marked as done; the conversation goes on."),
            "failed": _("#%(id)s %(name)s is marked as failed; the conversation goes on."),
            "retry": _("#%(id)s %(name)s runs again."),
        }
        self.message_user(request, done[outcome] % self._name(call))
        return HttpResponseRedirect(self.desk_url(request))

    def desk_url(self, request: HttpRequest) -> str:
        """The list the staff member came from (its filters kept), by default the desk."""
        url = reverse(f"{self.admin_site.name}:toolcalling_toolcall_changelist")
        preserved = request.GET.get("_changelist_filters")
        return f"{url}?{preserved}" if preserved else url

    def save_model(self, request: HttpRequest, obj: ToolCall, form: forms.ModelForm, change: bool) -> None:
        if "arguments" not in form.changed_data:
            return
        stored = ToolCall.objects.select_related("conversation").get(pk=obj.pk)
        try:
            approval.edit_arguments(stored, request.user, form.cleaned_data["arguments"])
        except (AlreadyDecided, DecisionNotAllowed, InvalidArguments) as exc:
            self.message_user(request, str(exc), messages.ERROR)

    @staticmethod
    def _name(call: ToolCall) -> dict[str, Any]:
        return {"id": call.pk, "name": call.name}

    # Statistics, and the rows' decisions ----------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        stats = path("stats/", self.admin_site.admin_view(self.stats_view), name="toolcalling_toolcall_stats")
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(self.decide_row_view),
            name="toolcalling_toolcall_decide",
        )
        return [stats, decide, *super().get_urls()]

    def decide_row_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A row's Approve or Reject: the list's own actions on that one call (so with their permission, four-eyes
        rule and LogEntry); Reject asks for the reason first."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_approve_permission(request):
            raise PermissionDenied
        try:
            queryset = self.get_queryset(request).filter(pk=int(unquote(object_id)))
        except ValueError:
            raise Http404
        if not queryset.exists():
            raise Http404
        if "_approve" in request.POST:
            self.approve_selected(request, queryset)
        else:
            asked = self.reject_selected(request, queryset)  # the reason page posts back here
            if asked is not None:
                return asked
        return HttpResponseRedirect(self.desk_url(request))

    def stats_view(self, request: HttpRequest) -> HttpResponse:
        """Per tool: calls, failures, failure rate and mean duration, from one aggregate query."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": pgettext("toolcalling admin", "Tool statistics"),
            "opts": self.model._meta,
            "rows": tool_stats(),
        }
        return TemplateResponse(request, "admin/toolcalling/toolcall/tool_stats.html", context)
