"""Template tags: ``{% toolcalling_chat "shop" %}`` renders a complete chat with one assistant."""

from __future__ import annotations

from typing import Any

from django import template
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse
from django.utils.translation import gettext

from ..conf import toolcalling_settings
from ..exceptions import NotRegistered
from ..toolkit import assistants

register = template.Library()


def chat_texts() -> dict[str, str]:
    """Every sentence chat.js may show, translated here (``{name}`` marks a value the page fills in)."""
    return {
        "you": gettext("You: "),
        "assistant": gettext("Assistant: "),
        "untitled": gettext("New conversation"),
        "toolsUsed": gettext("Tools used"),
        "thinking": gettext("Thinking…"),
        "using": gettext("Using: {tool}…"),
        "toolStatus": gettext("{tool}: {status}"),
        # How a call went, in words for the people the assistant serves.
        "status.running": gettext("running"),
        "status.succeeded": gettext("done"),
        "status.failed": gettext("did not work"),
        "status.awaiting_approval": gettext("waiting for approval"),
        "status.approved": gettext("approved"),
        "status.rejected": gettext("declined"),
        "status.cancelled": gettext("withdrawn"),
        "status.expired": gettext("not decided in time"),
        "waiting": gettext("A staff member has to confirm this before it runs:"),
        "approvedRunning": gettext("A staff member approved it; it is running now:"),
        "decided": gettext("{tool}: {status}."),
        "withdrawn": gettext("The request was withdrawn."),
        "turnFailed": gettext("The assistant could not finish this answer. You can send your message again."),
        "offlineUnsent": gettext(
            "The connection to the server was lost, so your message was not sent; it is still in the box. "
            "Trying to reconnect…"
        ),
        "offline": gettext("The connection to the server was lost. Trying to reconnect…"),
        "counter": gettext("{count} of {limit} characters"),
        "tooLong": gettext(
            "Your message has {count} characters, more than the {limit} allowed. Shorten it, then send it again."
        ),
        "serverError": gettext("Something went wrong on the server (error {status}). Please try again in a moment."),
        "refused": gettext("The server could not accept this (error {status})."),
    }


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
        "placeholder": placeholder or f"Message {assistant.name}",
        "examples": [e.strip() for e in examples.split("|") if e.strip()],
        "element_id": f"toolcalling-chat-{assistant.id}",
        "texts_id": f"toolcalling-chat-{assistant.id}-texts",
        "max_length": toolcalling_settings.MAX_MESSAGE_LENGTH,
        "texts": chat_texts(),
    }
