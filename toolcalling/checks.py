"""System checks: settings that cannot work, assistants that name tools which do not exist, and Celery wiring
that would lose approved calls or their events."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from ._celery_checks import check_celery_wiring  # noqa: F401 - registers the Celery checks
from ._tasks_checks import check_task_backend  # noqa: F401 - registers the Tasks checks (TASKS = "django")
from ._url_checks import check_urls_reachable  # noqa: F401 - registers the URLs check (toolcalling.W008)


@checks.register("toolcalling")
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from .conf import ToolcallingSettings

    errors: list[checks.CheckMessage] = []
    try:
        ToolcallingSettings().user_settings  # noqa: B018 - reading validates
    except ImproperlyConfigured as exc:
        errors.append(
            checks.Error(str(exc), hint=pgettext("toolcalling", "Fix settings.TOOLCALLING."), id="toolcalling.E001")
        )
    return errors


@checks.register("toolcalling")
def check_assistants(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from .exceptions import ImproperlyDefined, NotRegistered
    from .toolkit import assistants, check_extras

    errors: list[checks.CheckMessage] = []
    for assistant_cls in assistants.all():
        try:
            resolved = assistant_cls().resolve_tools()
        except NotRegistered as exc:
            errors.append(
                checks.Error(
                    _("Assistant %(assistant)s lists an unknown tool: %(error)s")
                    % {"assistant": repr(assistant_cls.id), "error": exc},
                    hint=_("Check the names in its tools list, and that the tool's app is in INSTALLED_APPS."),
                    obj=assistant_cls,
                    id="toolcalling.E002",
                )
            )
            continue
        try:
            check_extras(assistant_cls.argument_extras, resolved, assistant_cls.__qualname__)
        except ImproperlyDefined as exc:
            errors.append(
                checks.Error(str(exc), hint=_("Rename the extra fields."), obj=assistant_cls, id="toolcalling.E003")
            )
    return errors


@checks.register("toolcalling")
def check_model_apis(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A model API whose SDK is not installed (every turn on it would fail), and OpenAI reasoning models with
    tools on Chat Completions (which refuses them: every turn that offers a tool would fail)."""
    from .conf import toolcalling_settings as s
    from .exceptions import NotRegistered
    from .model_apis import load_model_api, needs_responses
    from .toolkit import assistants

    try:
        site_api = s.API
    except ImproperlyConfigured:
        return []  # reported by check_settings
    messages: list[checks.CheckMessage] = []
    unloadable: dict[str, str] = {}
    for name in {site_api, *(getattr(a, "api", None) or site_api for a in assistants.all())}:
        try:
            load_model_api(name)
        except ImproperlyConfigured as exc:
            unloadable[name] = str(exc)
    if site_api in unloadable:
        messages.append(
            checks.Error(
                _('TOOLCALLING["API"] is %(api)r, which cannot be used: %(error)s')
                % {"api": site_api, "error": unloadable[site_api]},
                hint=_("Install the package it names, or choose another API."),
                id="toolcalling.E006",
            )
        )
    for assistant_cls in assistants.all():
        assistant = assistant_cls()
        api = assistant.get_api()
        if getattr(assistant_cls, "api", None) is not None and api in unloadable:
            messages.append(
                checks.Error(
                    _("Assistant %(assistant)s uses the model API %(api)r, which cannot be used: %(error)s")
                    % {"assistant": repr(assistant_cls.id), "api": api, "error": unloadable[api]},
                    hint=_("Install the package it names, or set its api to another API or to None for the setting."),
                    obj=assistant_cls,
                    id="toolcalling.E006",
                )
            )
            continue
        if api in unloadable:
            continue  # the site's API, reported above
        try:
            has_tools = bool(assistant.resolve_tools() or getattr(assistant_cls, "mcp_servers", None))
        except NotRegistered:
            continue  # reported by check_assistants
        model = assistant.get_model()
        refuses = load_model_api(api).features.refuses_reasoning_model_tools
        if has_tools and refuses and needs_responses(model):
            messages.append(
                checks.Warning(
                    _(
                        "Assistant %(assistant)s offers tools with the model %(model)r on the Chat Completions "
                        "API, which refuses function tools for OpenAI's reasoning models: every turn that "
                        "offers a tool would fail."
                    )
                    % {"assistant": repr(assistant_cls.id), "model": model},
                    hint=_('Set TOOLCALLING["API"] (or the assistant\'s api) to "responses".'),
                    obj=assistant_cls,
                    id="toolcalling.W006",
                )
            )
    return messages


@checks.register("toolcalling")
def check_usage_limits(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from .conf import toolcalling_settings as s
    from .exceptions import ImproperlyDefined
    from .usage import parse_limits

    try:
        limits = s.USAGE_LIMITS
    except ImproperlyConfigured:
        return []  # reported by check_settings
    try:
        parse_limits(limits, 'TOOLCALLING["USAGE_LIMITS"]')
    except ImproperlyDefined as exc:
        return [
            checks.Error(
                str(exc),
                hint=_('Write each limit like {"tokens": 200_000, "per": "user", "period": "day"}.'),
                id="toolcalling.E005",
            )
        ]
    return []


@checks.register("toolcalling")
def check_prices(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Prices that cannot be used (E007); configured models with no price (W007: their cost shows as null); a
    cost limit on an assistant whose model has no price (E008: its turns are refused, never counted free)."""
    from .conf import toolcalling_settings as s
    from .exceptions import ImproperlyDefined
    from .model_apis import load_model_api
    from .toolkit import assistants
    from .usage import Pricing, currency_problem, parse_limits, price_problems, site_limits

    try:
        problems = [*price_problems(s.PRICES), *filter(None, [currency_problem(s.CURRENCY)])]
        model, api = s.MODEL, s.API
    except ImproperlyConfigured:
        return []  # reported by check_settings
    if problems:
        hint = _('Give rates per million tokens as strings, like {"gpt-4o": {"input": "2.50", "output": "10.00"}}.')
        return [checks.Error('TOOLCALLING["PRICES"]: ' + "; ".join(problems) + ".", hint=hint, id="toolcalling.E007")]
    try:
        site_costs = any(limit.quantity == "cost" for limit in site_limits())
    except ImproperlyConfigured:
        return []  # reported by check_usage_limits
    messages: list[checks.CheckMessage] = []
    unpriced: dict[tuple[str, str | None], list[str]] = {}
    try:
        site_pricing: Pricing | None = Pricing(model, load_model_api(api).price_provider)
    except ImproperlyConfigured:
        site_pricing = None  # its SDK is missing: reported by check_model_apis
    if site_pricing is not None and not site_pricing.priced:
        unpriced[(model, site_pricing.provider)] = []
    for assistant_cls in assistants.all():
        assistant = assistant_cls()
        try:
            pricing = Pricing(assistant.get_model(), assistant.get_price_provider())
        except ImproperlyConfigured:
            continue  # its API's SDK is missing: reported by check_model_apis
        if pricing.priced:
            continue
        unpriced.setdefault((pricing.model, pricing.provider), []).append(str(assistant_cls.id))
        try:
            own = parse_limits(list(getattr(assistant_cls, "usage_limits", None) or []), str(assistant_cls.id))
        except ImproperlyDefined:
            own = []  # a callable or a method decides them per user; their turns are refused all the same
        if site_costs or any(limit.quantity == "cost" for limit in own):
            messages.append(
                checks.Error(
                    _(
                        "Assistant %(assistant)s has a cost limit, but its model %(model)r has no price: "
                        "every turn of it is refused (unpriced_model)."
                    )
                    % {"assistant": repr(assistant_cls.id), "model": pricing.model},
                    hint=_('Give the model a price in TOOLCALLING["PRICES"].'),
                    obj=assistant_cls,
                    id="toolcalling.E008",
                )
            )
    if s.OFFLINE_MODEL:
        return messages  # the built-in offline model: nothing is paid for, so nothing is missing
    for (name, _provider), users in unpriced.items():
        messages.append(
            checks.Warning(
                _("The model %(model)r (used by %(users)s) has no price: the cost of its answers shows as null.")
                % {"model": name, "users": ", ".join(users) or 'TOOLCALLING["MODEL"]'},
                hint=_('Give it a price in TOOLCALLING["PRICES"] (or check its name and BASE_URL).'),
                id="toolcalling.W007",
            )
        )
    return messages


@checks.register("toolcalling")
def check_model_endpoint(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from .conf import toolcalling_settings as s

    try:
        offline, api_key, base_url = s.OFFLINE_MODEL, s.API_KEY, s.BASE_URL
    except ImproperlyConfigured:
        return []  # reported by check_settings
    if offline or api_key or base_url:
        return []
    return [
        checks.Warning(
            _(
                "No model endpoint is configured: TOOLCALLING has no API_KEY and OPENAI_API_KEY is not set, "
                "so every turn will fail against OpenAI."
            ),
            hint=_(
                'Set OPENAI_API_KEY, or TOOLCALLING["BASE_URL"] for a local server, '
                'or TOOLCALLING["OFFLINE_MODEL"] = True for the offline demo model.'
            ),
            id="toolcalling.W001",
        )
    ]


@checks.register("toolcalling")
def check_attachment_storage(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``ATTACHMENTS["STORAGE"]`` names a ``STORAGES`` alias that exists: otherwise every upload would fail."""
    from django.core.files.storage import InvalidStorageError, storages

    from .conf import toolcalling_settings as s

    try:
        alias = s.ATTACHMENTS["STORAGE"]
    except ImproperlyConfigured:
        return []  # reported by check_settings
    try:
        storages[alias]
    except InvalidStorageError:
        return [
            checks.Error(
                _('TOOLCALLING["ATTACHMENTS"]["STORAGE"] is %(alias)r, which is not a STORAGES alias.')
                % {"alias": alias},
                hint=_("Name one of settings.STORAGES (such as 'default'), or add that alias to STORAGES."),
                id="toolcalling.E009",
            )
        ]
    return []


@checks.register("toolcalling")
def check_site_url(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from django.apps import apps

    from .conf import toolcalling_settings as s
    from .toolkit import tools

    try:
        site_url = s.SITE_URL
    except ImproperlyConfigured:
        return []  # reported by check_settings
    if site_url or apps.is_installed("django.contrib.sites"):
        return []
    gated = sorted(t.name for t in tools.all() if t.requires_approval is not False and t.approver == "staff")
    if not gated:
        return []
    return [
        checks.Warning(
            _(
                "Links to the admin in approval notifications will be relative (e.g. /admin/...), so they "
                "cannot be opened from a mail client: TOOLCALLING has no SITE_URL and django.contrib.sites "
                "is not installed. Tools that wait for staff: %(tools)s."
            )
            % {"tools": ", ".join(gated)},
            hint=_('Set TOOLCALLING["SITE_URL"] = "https://your.site", or install django.contrib.sites.'),
            id="toolcalling.W002",
        )
    ]
