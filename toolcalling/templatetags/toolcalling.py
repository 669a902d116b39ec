"""Template tags: ``{% toolcalling_chat "shop" %}`` renders a complete chat with one assistant."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from ..conf import toolcalling_settings
from ..exceptions import NotRegistered
from ..toolkit import assistants

register = template.Library()


@register.inclusion_tag("toolcalling/chat.html", takes_context=True)
def toolcalling_chat(
    context: template.Context, assistant_id: str, *, placeholder: str = "", examples: str = "", client_tools: str = ""
) -> dict[str, Any]:
    """A chat with the assistant ``assistant_id`` for the signed-in user: their conversations, streamed
    answers, tool activity, the wait for staff approval, and the user's own say on the calls they confirm (and on
    such a call whose process stopped while it ran). ``examples`` is a ``|``-separated list of
    questions offered as buttons. ``client_tools`` registers the page's JavaScript functions that run the
    assistant's client tools, ``|``-separated ``tool=function`` pairs (``"pick_color=pickColor|show_map=maps.show"``):
    a function gets the call's arguments, and what it returns (or awaits) is the call's result.

    The page needs the user's session (the API uses it) and Django's CSRF protection as usual.
    """
    try:
        assistant = assistants.get(assistant_id)()
    except NotRegistered as exc:
        raise ImproperlyConfigured(f"{{% toolcalling_chat {assistant_id!r} %}}: {exc}") from exc
    functions = registered_functions(assistant, client_tools)
    request = context.get("request")
    user = getattr(request, "user", None)
    files = toolcalling_settings.ATTACHMENTS
    return {
        "assistant": assistant,
        "allowed": user is not None and user.is_authenticated and assistant.has_permission(user),
        "api_url": reverse("toolcalling:conversation-list"),
        "tool_calls_url": reverse("toolcalling:toolcall-list"),
        "texts": chat_texts(),
        "placeholder": placeholder
        or pgettext("toolcalling chat", "Message %(assistant)s") % {"assistant": assistant.name},
        "examples": [e.strip() for e in examples.split("|") if e.strip()],
        "element_id": f"toolcalling-chat-{assistant.id}",
        "texts_id": f"toolcalling-chat-{assistant.id}-texts",
        "max_length": toolcalling_settings.MAX_MESSAGE_LENGTH,
        "attachments_url": reverse("toolcalling:attachment-list"),
        "attachment_max_bytes": files["MAX_BYTES"],
        "attachment_max_files": files["MAX_PER_MESSAGE"],
        "attachment_accept": ",".join(files["TYPES"]),
        "client_tools": functions,
        "client_tools_id": f"toolcalling-chat-{assistant.id}-client-tools",
    }


JS_PATH = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


def registered_functions(assistant: Any, pairs: str) -> dict[str, str]:
    """``{tool name: JavaScript function path}`` from the tag's ``client_tools``; a tool that is not one of the
    assistant's ``client_tools``, or a function that is no plain (dotted) name, fails the page at once."""
    declared = {t.name for t in assistant.client_tools}
    found: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in pairs.split("|"))):
        name, _sep, function = (part.strip() for part in pair.partition("="))
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise ImproperlyConfigured(
                f"{{% toolcalling_chat {assistant.id!r} client_tools=... %}}: {name!r} is not a client tool of the "
                f"assistant (its client_tools: {known})."
            )
        if not JS_PATH.match(function):
            raise ImproperlyConfigured(
                f"{{% toolcalling_chat {assistant.id!r} client_tools=... %}}: write {name}=functionName, a "
                f"JavaScript function's (dotted) name, not {function!r}."
            )
        found[name] = function
    return found


def chat_texts() -> dict[str, str]:
    """Every sentence chat.js and confirm.js may show, translated here (``%(name)s`` placeholders are filled in
    by the script)."""
    return {
        "you": pgettext("toolcalling chat", "You: "),
        "assistant": pgettext("toolcalling chat", "Assistant: "),
        "untitled": pgettext("toolcalling chat", "New conversation"),
        "toolsUsed": pgettext("toolcalling chat", "Tools used"),
        "thinking": pgettext("toolcalling chat", "Thinking…"),
        "using": pgettext("toolcalling chat", "Using: %(tool)s…"),
        "toolStatus": pgettext("toolcalling chat", "%(tool)s: %(status)s"),
        # How a call went, in words for the people the assistant serves.
        "status.running": pgettext("toolcalling chat", "running"),
        "status.succeeded": pgettext("toolcalling chat", "done"),
        "status.failed": pgettext("toolcalling chat", "did not work"),
        "status.awaiting_approval": pgettext("toolcalling chat", "waiting for approval"),
        "status.approved": pgettext("toolcalling chat", "approved"),
        "status.rejected": pgettext("toolcalling chat", "declined"),
        "status.cancelled": pgettext("toolcalling chat", "withdrawn"),
        "status.expired": _("not decided in time"),
        "status.outcome_unknown": pgettext("toolcalling chat", "interrupted"),
        "withdrawn": _("The request was withdrawn."),
        "turnFailed": _("The assistant could not finish this answer. You can send your message again."),
        "offlineUnsent": _(
            "The connection to the server was lost, so your message was not sent; it is still in the box. "
            "Trying to reconnect…"
        ),
        "offline": _("The connection to the server was lost. Trying to reconnect…"),
        "counter": _("%(count)s of %(limit)s characters"),
        "tooLong": _(
            "Your message has %(count)s characters, more than the %(limit)s allowed. Shorten it, then send it again."
        ),
        "serverError": _("Something went wrong on the server (error %(status)s). Please try again in a moment."),
        "refused": _("The server could not accept this (error %(status)s)."),
        "waitingStaff": _("Waiting for staff approval."),
        "waitingUser": _("Your confirmation is needed."),
        "staffText": _("A staff member has to confirm this before it runs:"),
        "userText": _("Confirm or decline before it runs:"),
        "approvedByStaff": _("A staff member approved it; it is running now:"),
        "approvedByUser": _("You confirmed it; it is running now:"),
        "decided": pgettext("toolcalling chat", "%(name)s was %(status)s."),
        "confirm": pgettext("toolcalling chat", "Confirm"),
        "decline": pgettext("toolcalling chat", "Decline"),
        "confirmed": pgettext("toolcalling chat", "Confirmed."),
        "declined": pgettext("toolcalling chat", "Declined."),
        # The name a Confirm or Decline button has for screen readers: "Confirm: Cancel an order (order no: 7)".
        "choiceLabel": pgettext("toolcalling chat", "%(choice)s: %(call)s"),
        "previewFailed": _("The preview failed: %(error)s"),
        # A call whose process stopped while it ran (outcome unknown): the user of a call they confirm says what
        # happened; staff decide the others.
        "unknownUser": _("It is not known whether this took effect."),
        "unknownUserText": _("It was interrupted while it ran. Check, then say what happened:"),
        "unknownStaff": _("Waiting for a staff member."),
        "unknownStaffText": _("This was interrupted while it ran; a staff member checks whether it took effect:"),
        "settleNote": _("What you found (optional)"),
        "settleSucceeded": pgettext("toolcalling chat", "It happened"),
        "settleRetry": pgettext("toolcalling chat", "Run it again"),
        "settleFailed": pgettext("toolcalling chat", "It did not happen"),
        "settledSucceeded": pgettext("toolcalling chat", "Marked as done."),
        "settledRetry": _("It runs again now."),
        "settledFailed": _("Marked as not done."),
        # Attachments (attach.js).
        "attachments": pgettext("toolcalling files of a message", "Attachments"),
        "uploading": pgettext("toolcalling chat", "Uploading %(name)s"),
        "removeFile": pgettext("toolcalling chat", "Remove %(name)s"),
        "waitingForUploads": _("Waiting for the files to finish uploading…"),
        "fileRefused": _("%(name)s was not attached: %(reason)s"),
        "fileTooLarge": _("%(name)s was not attached: it is larger than %(limit)s."),
        "tooManyFiles": _("A message may carry at most %(limit)s files."),
    }
