"""What the app's commands look up from their arguments: the user a command acts for and the assistant."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils.translation import pgettext

from ..assistant import Assistant
from ..exceptions import NotRegistered


def user_and_assistant(username: str, assistant_id: str) -> tuple[Any, Assistant]:
    """The user named ``username`` and the assistant ``assistant_id``; ``CommandError`` naming what is missing."""
    user_model = get_user_model()
    try:
        user = user_model._default_manager.get_by_natural_key(username)
    except user_model.DoesNotExist:
        raise CommandError(pgettext("toolcalling", "No user %(username)s.") % {"username": repr(username)})
    try:
        return user, Assistant.get(assistant_id)
    except NotRegistered as exc:
        raise CommandError(str(exc))
