"""System checks: settings that cannot work and assistants that name tools which do not exist."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured


@checks.register("toolcalling")
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from .conf import ToolcallingSettings

    errors: list[checks.CheckMessage] = []
    try:
        ToolcallingSettings().user_settings  # noqa: B018 - reading validates
    except ImproperlyConfigured as exc:
        errors.append(checks.Error(str(exc), hint="Fix settings.TOOLCALLING.", id="toolcalling.E001"))
    return errors


@checks.register("toolcalling")
def check_assistants(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from . import extras
    from .exceptions import ImproperlyDefined, NotRegistered
    from .registry import assistants

    errors: list[checks.CheckMessage] = []
    for assistant_cls in assistants.all():
        try:
            resolved = assistant_cls().resolve_tools()
        except NotRegistered as exc:
            errors.append(
                checks.Error(
                    f"Assistant {assistant_cls.id!r} lists an unknown tool: {exc}",
                    hint="Check the names in its tools list, and that the tool's app is in INSTALLED_APPS.",
                    obj=assistant_cls,
                    id="toolcalling.E002",
                )
            )
            continue
        try:
            extras.check(assistant_cls.argument_extras, resolved, assistant_cls.__qualname__)
        except ImproperlyDefined as exc:
            errors.append(
                checks.Error(str(exc), hint="Rename the extra fields.", obj=assistant_cls, id="toolcalling.E003")
            )
    return errors
