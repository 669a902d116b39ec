"""An admin action posted with ids that are none of the list's (a hand-made or stale form): refused, not a 500."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _


class CheckedSelectionAdmin(admin.ModelAdmin):
    """A ``ModelAdmin`` whose actions run only when every selected id is one its primary key can hold. Django's
    own lets the action's query raise (``"1.5"`` is no integer, ``"x"`` no UUID), which is a 500."""

    # Django 6.1 passes ``action_location`` (the change list or the change form) by keyword.
    def response_action(
        self, request: HttpRequest, queryset: QuerySet[Any], *args: Any, **kwargs: Any
    ) -> HttpResponse | None:
        key = self.model._meta.pk
        try:
            for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
                key.to_python(value)
        except ValidationError:
            text = _("No action was run: the selection names items this list does not have.")
            self.message_user(request, text, messages.WARNING)
            return None  # the change list answers a redirect back to itself, as for an empty selection
        return super().response_action(request, queryset, *args, **kwargs)
