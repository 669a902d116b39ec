"""Template tags: ``{% toolcalling_chat "shop" %}`` renders a complete chat with one assistant."""

from __future__ import annotations

from typing import Any

from django import template
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse
from django.utils.translation import gettext as _

from ..exceptions import NotRegistered
from ..toolkit import assistants

register = template.Library()


@register.inclusion_tag("toolcalling/chat.html", takes_context=True)
def toolcalling_chat(
    context: template.Context, assistant_id: str, *, placeholder: str = "", examples: str = ""
) -> dict[str, Any]:
    """A chat with the assistant ``assistant_id`` for the signed-in user: their conversations, streamed
    answers, tool activity, and the wait for staff approval. ``examples`` is a ``|``-separated list of
    questions offered as buttons.

    The page needs the user's session (the API uses it) and Django's CSRF protection as usual.
    """
    try:
        assistant = assistants.get(assistant_id)()
    except NotRegistered as exc:
        raise ImproperlyConfigured(f"{{% toolcalling_chat {assistant_id!r} %}}: {exc}") from exc
    request = context.get("request")
    user = getattr(request, "user", None)
    return {
        "assistant": assistant,
        "allowed": user is not None and user.is_authenticated and assistant.has_permission(user),
        "api_url": reverse("toolcalling:conversation-list"),
        "tool_calls_url": reverse("toolcalling:toolcall-list"),
        "texts": chat_texts(),
        "placeholder": placeholder or f"Message {assistant.name}",
        "examples": [e.strip() for e in examples.split("|") if e.strip()],
        "element_id": f"toolcalling-chat-{assistant.id}",
        "texts_id": f"toolcalling-chat-{assistant.id}-texts",
    }


def chat_texts() -> dict[str, str]:
    """The words chat.js shows, translated here (``%(name)s`` placeholders are filled in by the script)."""
    return {
        "waitingStaff": _("Waiting for staff approval."),
        "waitingUser": _("Your confirmation is needed."),
        "staffText": _("A staff member has to confirm this before it runs:"),
        "userText": _("Confirm or decline before it runs:"),
        "approvedByStaff": _("A staff member approved it; it is running now:"),
        "approvedByUser": _("You confirmed it; it is running now:"),
        "decided": _("%(name)s was %(status)s."),
        "confirm": _("Confirm"),
        "decline": _("Decline"),
        "confirmed": _("Confirmed."),
        "declined": _("Declined."),
        "previewFailed": _("The preview failed: %(error)s"),
    }
