"""The ``TOOLCALLING`` settings dict, read through one object that follows ``setting_changed``."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

DEFAULTS: dict[str, Any] = {
    # Model endpoint (any OpenAI-compatible Chat Completions server, OpenAI's Responses API, Anthropic's Messages).
    "MODEL": "gpt-4o-mini",
    "API": "chat_completions",  # "chat_completions", "responses" (OpenAI's, stateless), "anthropic" (its Messages)
    "API_KEY": None,  # None: env OPENAI_API_KEY (on "anthropic": ANTHROPIC_API_KEY)
    "BASE_URL": None,  # None: env OPENAI_BASE_URL, else OpenAI (on "anthropic": ANTHROPIC_BASE_URL, else Anthropic)
    "TIMEOUT": 60.0,
    "MAX_RETRIES": 2,
    "OFFLINE_MODEL": False,  # True: the built-in offline demo model (toolcalling.contrib.offline), no network
    "CLIENT_FACTORY": None,  # dotted path of a function returning the openai.OpenAI client to use
    "MODEL_OPTIONS": {},  # extra keyword arguments for chat.completions.create (temperature, ...)
    # The loop.
    "MAX_CALLS_PER_TOOL": 40,
    "MAX_TOTAL_TOOL_CALLS": 150,
    "MAX_MODEL_CALLS": 50,
    "STALE_TURN_TIMEOUT": 15 * 60,  # seconds without progress after which a "running" turn is taken over
    "ON_LIMIT_EXCEEDED": "return_error",
    "TOOL_ERRORS": "return_to_model",
    "HOOKS": [],  # dotted paths or hook instances run for every assistant
    # Usage limits across turns, e.g. {"tokens": 200_000, "per": "user", "period": "day"} (see toolcalling.usage).
    "USAGE_LIMITS": [],
    # Costs: rates per million tokens that set or override genai-prices', e.g.
    # {"gpt-4o": {"input": "2.50", "cached_input": "1.25", "output": "10.00"}} (see toolcalling.usage).
    "PRICES": {},
    "CURRENCY": "USD",  # of PRICES and of every cost; genai-prices' prices apply only in "USD"
    # An answer whose endpoint reported no usage (or a malformed one) under a token or cost limit: "stop" (no more
    # turns under that limit until its period resets) or "estimate" (it counts as its request's estimated tokens).
    "UNKNOWN_USAGE": "stop",
    # Input limits of the API.
    "MAX_MESSAGE_LENGTH": 20_000,
    # Files users attach to messages (see toolcalling.attachments); a site's dict is merged over these.
    "ATTACHMENTS": {
        "MAX_BYTES": 20 * 1024 * 1024,  # larger uploads are refused (413) while they are read, before storage
        "TYPES": ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"],  # decided by the bytes
        "STORAGE": "default",  # a STORAGES alias
        "MAX_PER_MESSAGE": 5,
        # What one model request carries of the history's files: the newest that fit both, a text stub for each
        # older one (a message whose own files exceed them is refused). 20 MiB is about 27 MB of base64, within
        # Anthropic's 32 MB per request.
        "MAX_PER_REQUEST": 10,
        "MAX_BYTES_PER_REQUEST": 20 * 1024 * 1024,
        "UNATTACHED_MAX_AGE": 24 * 60 * 60,  # seconds an upload no message took is kept (toolcalling_expire)
        # Uploads one user may keep that no message took yet; more is a 413 upload_quota_exceeded.
        "MAX_UNSENT": 20,
        "MAX_UNSENT_BYTES": 100 * 1024 * 1024,
    },
    # The MCP endpoint.
    "MCP_MAX_BATCH": 20,  # JSON-RPC messages one MCP request (a batch) may carry; each call counts for the throttle
    # Background work (approved calls, continuations, background turns, the sweep): "celery" (the site's Celery
    # app, toolcalling.tasks) or "django" (Django's Tasks framework, toolcalling.django_tasks, settings.TASKS).
    "TASKS": "celery",
    # Approval.
    "APPROVAL_TIMEOUT": 24 * 60 * 60,  # seconds a call may wait for a decision
    "APPROVAL_RUN_TIMEOUT": 60 * 60,  # seconds an approved call may be "running" before a sweep marks it failed
    "APPROVER_MAY_BE_REQUESTER": False,  # True: staff may approve the calls of their own conversations
    "SITE_URL": None,  # "https://shop.example.com": links in notifications; None: django.contrib.sites, if installed
    # Tool search.
    "TOOL_SEARCH_THRESHOLD": 30,
    # Structured output: "json_schema" (response_format with the schema) or "json_object" (the schema in the
    # instructions, for endpoints without json_schema support).
    "OUTPUT_MODE": "json_schema",
    # Observability.
    "LOG_PAYLOADS": False,  # put tool arguments and results in logs and spans
    # Evals: a YAML dataset file the admin's "add to dataset" appends cases to; None: the action downloads them.
    "EVAL_DATASET": None,
    # Events (streaming, background turns).
    "EVENTS_REDIS_URL": None,  # None: env REDIS_URL; unset: events stay in this process
    "EVENTS_MAX_LEN": 2000,  # events kept per conversation for readers that resume
    "EVENTS_MAX_BYTES": 32 * 1024 * 1024,  # bytes of events one process keeps without Redis, in all
    "EVENTS_TTL": 7 * 24 * 60 * 60,  # seconds a conversation's events are kept in Redis after the last one
    "EVENTS_KEEPALIVE": 15.0,  # seconds between keepalive comments on a quiet stream
    "EVENTS_IDLE_TIMEOUT": 120.0,  # seconds without an event before GET .../events/ closes
}

# The model APIs ``API`` and ``Assistant.api`` may name, each with its class by dotted path (imported when first
# used, by ``model_apis.load_model_api``: Anthropic's needs its optional SDK, the ``[anthropic]`` extra). A new API
# is its module and one line here; the names ``API`` may take are the keys (``API_CHOICES`` follows them).
MODEL_APIS: dict[str, str] = {
    "chat_completions": "toolcalling.model_apis.openai.ChatCompletions",
    "responses": "toolcalling.model_apis.openai.Responses",
    "anthropic": "toolcalling.model_apis.anthropic.Anthropic",
}
API_CHOICES = MODEL_APIS.keys()

CHOICES: dict[str, Collection[str]] = {
    "API": API_CHOICES,
    "ON_LIMIT_EXCEEDED": ("raise", "return_error"),
    "TOOL_ERRORS": ("return_to_model", "raise"),
    "OUTPUT_MODE": ("json_schema", "json_object"),
    "UNKNOWN_USAGE": ("stop", "estimate"),
    "TASKS": ("celery", "django"),
}

IMPORT_STRINGS = ("HOOKS",)

# The types an attachment can be, each recognised from its first bytes (toolcalling.attachments); TYPES picks some.
ATTACHMENT_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf")
# The ATTACHMENTS keys that are counts of files or bytes (or seconds): each a positive integer.
ATTACHMENT_NUMBERS = (
    "MAX_BYTES",
    "MAX_PER_MESSAGE",
    "MAX_PER_REQUEST",
    "MAX_BYTES_PER_REQUEST",
    "UNATTACHED_MAX_AGE",
    "MAX_UNSENT",
    "MAX_UNSENT_BYTES",
)

# What OFFLINE_MODEL = True selects: the demo model lives outside the engine and is found by this path.
OFFLINE_CLIENT_FACTORY = "toolcalling.contrib.offline.client"
OFFLINE_ANTHROPIC_CLIENT_FACTORY = "toolcalling.contrib.offline.anthropic_client"

# What TASKS = "django" needs where this Django has no django.tasks (named by a check and by a first enqueue).
TASKS_FRAMEWORK_INSTALL = (
    "Django 6.0 or later, or on Django 5.2 the django-tasks backport: pip install 'django-toolcalling[tasks]'"
)

T = TypeVar("T")


class ToolcallingSettings:
    """Attribute access to ``settings.TOOLCALLING`` with defaults, validation and lazy imports."""

    def __init__(self, user_settings: dict[str, Any] | None = None) -> None:
        self._user_settings = user_settings
        self._cached: set[str] = set()
        self._derived: dict[str, Any] = {}
        self._lock = threading.RLock()

    @property
    def user_settings(self) -> dict[str, Any]:
        if self._user_settings is None:
            self._user_settings = dict(getattr(settings, "TOOLCALLING", {}) or {})
            self.validate(self._user_settings)
        return self._user_settings

    @staticmethod
    def validate(user_settings: dict[str, Any]) -> None:
        unknown = sorted(set(user_settings) - set(DEFAULTS))
        if unknown:
            raise ImproperlyConfigured(
                f"Unknown TOOLCALLING setting(s): {', '.join(unknown)}. Known: {', '.join(sorted(DEFAULTS))}."
            )
        for key, allowed in CHOICES.items():
            if key in user_settings and user_settings[key] not in allowed:
                raise ImproperlyConfigured(
                    f"TOOLCALLING[{key!r}] must be one of {', '.join(map(repr, allowed))}, not {user_settings[key]!r}."
                )
        for key in (
            "MAX_CALLS_PER_TOOL",
            "MAX_TOTAL_TOOL_CALLS",
            "MAX_MODEL_CALLS",
            "MAX_MESSAGE_LENGTH",
            "MCP_MAX_BATCH",
            "APPROVAL_TIMEOUT",
            "APPROVAL_RUN_TIMEOUT",
            "STALE_TURN_TIMEOUT",
            "EVENTS_MAX_LEN",
            "EVENTS_MAX_BYTES",
            "EVENTS_TTL",
        ):
            value = user_settings.get(key, DEFAULTS[key])
            if not isinstance(value, int) or value < 1:
                raise ImproperlyConfigured(f"TOOLCALLING[{key!r}] must be a positive integer, not {value!r}.")
        validate_attachments(user_settings.get("ATTACHMENTS", {}))
        site_url = user_settings.get("SITE_URL")
        if site_url is not None and not (isinstance(site_url, str) and site_url.startswith(("http://", "https://"))):
            raise ImproperlyConfigured(
                f"TOOLCALLING['SITE_URL'] must start with http:// or https:// (e.g. 'https://shop.example.com'), "
                f"not {site_url!r}."
            )

    def __getattr__(self, name: str) -> Any:
        # Only a setting not read since the last reload comes here (a read one is an attribute): under the lock,
        # so a reload in another thread (a test's override) never meets a value read from the settings before it
        # being kept after it.
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid TOOLCALLING setting: {name!r}")
        with self._lock:
            value = self.user_settings.get(name, DEFAULTS[name])
            if name == "API_KEY" and value is None:
                value = os.environ.get("OPENAI_API_KEY")
            elif name == "BASE_URL" and value is None:
                value = os.environ.get("OPENAI_BASE_URL") or None
            elif name == "EVENTS_REDIS_URL" and value is None:
                value = os.environ.get("REDIS_URL") or None
            elif name == "ATTACHMENTS":
                value = {**DEFAULTS["ATTACHMENTS"], **value}
            elif name in IMPORT_STRINGS:
                value = [import_string(v)() if isinstance(v, str) else v for v in value]
            self._cached.add(name)
            setattr(self, name, value)
            return value

    def derived(self, key: str, build: Callable[[], T]) -> T:
        """An object built from these settings (the model client, the event store), built once and kept
        until the settings change; so no module keeps state of its own that tests would have to reset."""
        with self._lock:
            if key not in self._derived:
                self._derived[key] = build()
            return self._derived[key]

    def reload(self) -> None:
        with self._lock:
            for name in self._cached:
                delattr(self, name)
            self._cached.clear()
            self._user_settings = None
            self._derived.clear()


def validate_attachments(value: Any) -> None:
    """``ATTACHMENTS``: known keys, positive integers, and types the app can recognise from their bytes."""
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"TOOLCALLING['ATTACHMENTS'] must be a dict, not {value!r}.")
    known = DEFAULTS["ATTACHMENTS"]
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ImproperlyConfigured(
            f"Unknown TOOLCALLING['ATTACHMENTS'] key(s): {', '.join(unknown)}. Known: {', '.join(sorted(known))}."
        )
    numbers = {key: value.get(key, known[key]) for key in ATTACHMENT_NUMBERS}
    for key, number in numbers.items():
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ImproperlyConfigured(
                f"TOOLCALLING['ATTACHMENTS'][{key!r}] must be a positive integer, not {number!r}."
            )
    # Each bound on many files holds at least what one message may carry: else that message could be uploaded
    # but never sent.
    for bound, one in (("MAX_PER_REQUEST", "MAX_PER_MESSAGE"), ("MAX_UNSENT", "MAX_PER_MESSAGE"),
                       ("MAX_BYTES_PER_REQUEST", "MAX_BYTES"), ("MAX_UNSENT_BYTES", "MAX_BYTES")):  # fmt: skip
        if numbers[bound] < numbers[one]:
            raise ImproperlyConfigured(
                f"TOOLCALLING['ATTACHMENTS'][{bound!r}] ({numbers[bound]}) must be at least {one!r} "
                f"({numbers[one]}): raise it, or lower {one!r}."
            )
    types = value.get("TYPES", known["TYPES"])
    if not isinstance(types, (list, tuple)) or any(t not in ATTACHMENT_TYPES for t in types):
        raise ImproperlyConfigured(
            f"TOOLCALLING['ATTACHMENTS']['TYPES'] must list types out of {', '.join(ATTACHMENT_TYPES)} "
            f"(recognised from their bytes), not {types!r}."
        )
    if not isinstance(value.get("STORAGE", known["STORAGE"]), str):
        raise ImproperlyConfigured("TOOLCALLING['ATTACHMENTS']['STORAGE'] must be the name of a STORAGES alias.")


toolcalling_settings = ToolcallingSettings()


@receiver(setting_changed)
def reload_toolcalling_settings(*, setting: str, **kwargs: Any) -> None:
    """Re-read ``TOOLCALLING`` when tests override it; what was built from it is built again on next use."""
    if setting == "TOOLCALLING":
        toolcalling_settings.reload()
