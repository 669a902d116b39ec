"""The settings reference: a table built from ``toolcalling.conf.DEFAULTS`` when the site is built.

The page ``reference/settings.md`` holds ``<!-- settings-table -->`` where the table goes. Every key of
``DEFAULTS`` needs a sentence here, and every sentence a key: otherwise the build fails, so the page cannot
fall behind the code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, so its toolcalling is read

from toolcalling.conf import DEFAULTS  # noqa: E402

MARKER = "<!-- settings-table -->"

# Defaults that are read from the environment when the setting is None.
FROM_ENVIRONMENT = {
    "API_KEY": 'env `OPENAI_API_KEY` (on `"anthropic"`: `ANTHROPIC_API_KEY`)',
    "BASE_URL": 'env `OPENAI_BASE_URL`, else OpenAI (on `"anthropic"`: `ANTHROPIC_BASE_URL`, else Anthropic)',
    "EVENTS_REDIS_URL": "env `REDIS_URL`",
}

MEANINGS = {
    "MODEL": "model name sent to the endpoint (an assistant's `model` overrides it)",
    "API": (
        'the model API: `"chat_completions"`, `"responses"` (OpenAI\'s, stateless) or `"anthropic"` '
        "(Anthropic's Messages, extra `[anthropic]`); an assistant's `api` overrides it (see [choosing the "
        "model API](../guides/model-apis.md#choosing-the-model-api))"
    ),
    "API_KEY": "API key",
    "BASE_URL": "the endpoint's base URL, e.g. `http://localhost:11434/v1`",
    "TIMEOUT": "seconds per model request",
    "MAX_RETRIES": "retries of the `openai` SDK on connection errors, 429 and 5xx",
    "OFFLINE_MODEL": "use the built-in offline demo model (`toolcalling.contrib.offline`; no network)",
    "CLIENT_FACTORY": (
        "dotted path of a function returning the `openai.OpenAI` client to use (an `AzureOpenAI`, a custom "
        '`http_client`, …) instead of one built from the keys above (not used on `"anthropic"`)'
    ),
    "MODEL_OPTIONS": (
        "extra keys of every model request (`temperature`, …; on the Responses and Anthropic APIs Chat "
        "Completions names are translated)"
    ),
    "MAX_CALLS_PER_TOOL": "calls of one tool per turn",
    "MAX_TOTAL_TOOL_CALLS": "tool calls per turn",
    "MAX_MODEL_CALLS": "model calls per turn",
    "STALE_TURN_TIMEOUT": (
        "seconds without progress after which a `running` turn (whose process died) is taken over, by the next "
        "message or by the sweep, which goes on from what is stored (see [Failures](../guides/failures.md))"
    ),
    "ON_LIMIT_EXCEEDED": '`"return_error"` or `"raise"`',
    "TOOL_ERRORS": '`"return_to_model"` or `"raise"`',
    "HOOKS": "hooks run around every assistant's loop (dotted paths or instances)",
    "PRICES": (
        'rates per million tokens that set or override genai-prices\', e.g. `{"gpt-4.1": {"input": "2.00", '
        '"cached_input": "0.50", "output": "8.00", "cache_write": "2.50"}}` (see '
        "[costs](../guides/limits-and-costs.md#costs))"
    ),
    "CURRENCY": 'the currency of `PRICES` and of every cost (genai-prices\' prices apply in `"USD"` only)',
    "UNKNOWN_USAGE": (
        'what an answer whose endpoint reported no usage (or a malformed one) is under a token or cost limit: `"stop"` '
        '(that limit has no room left until its period resets) or `"estimate"` (its request\'s estimated tokens and '
        "their cost count); see [unknown usage](../guides/limits-and-costs.md#unknown-usage)"
    ),
    "USAGE_LIMITS": (
        'limits across turns, e.g. `{"tokens": 200_000, "per": "user", "period": "day"}`, on every assistant '
        "(see [usage limits](../guides/limits-and-costs.md#usage-limits))"
    ),
    "ATTACHMENTS": (
        "files users attach, merged over the defaults: `MAX_BYTES` (largest upload), `TYPES` (the allowed types, "
        "read from the bytes), `STORAGE` (a `STORAGES` alias), `MAX_PER_MESSAGE`, `MAX_PER_REQUEST` and "
        "`MAX_BYTES_PER_REQUEST` (the newest files one model request carries, 10 and 20 MiB; older ones go as a "
        "text stub), `UNATTACHED_MAX_AGE` (seconds before `toolcalling_expire` deletes an upload never sent), "
        "`MAX_UNSENT` and `MAX_UNSENT_BYTES` (what one user may keep uploaded but not sent, 20 files and 100 MiB; "
        "see [attachments](../guides/attachments.md#bounds))"
    ),
    "MAX_MESSAGE_LENGTH": "longest user message the API accepts (the chat page shows it and counts)",
    "MCP_MAX_BATCH": (
        "JSON-RPC messages one MCP request (a batch) may carry; a longer batch is refused whole (`-32600`), "
        "and each request in a batch counts for DRF's throttles"
    ),
    "APPROVAL_TIMEOUT": "seconds a gated call may wait for a decision before it expires",
    "APPROVAL_RUN_TIMEOUT": (
        "the lease of an approved call's run: seconds it may stay `running` before a redelivery or the sweep "
        "takes its worker for gone (an idempotent tool's call runs again, any other's outcome is unknown)"
    ),
    "TASKS": (
        'what runs the background jobs (approved calls, continuations, background turns, the sweep): `"celery"` '
        "(the site's Celery app) or `\"django\"` (Django's Tasks framework and `settings.TASKS`, extra `[tasks]` on "
        "Django 5.2; see [without Celery](../guides/deployment.md#without-celery))"
    ),
    "APPROVER_MAY_BE_REQUESTER": (
        "whether a staff member may approve a call from their own conversation (four eyes when False)"
    ),
    "SITE_URL": (
        'the site\'s address for links in notifications, e.g. `"https://shop.example.com"`; `None`: '
        "`django.contrib.sites`, if installed"
    ),
    "TOOL_SEARCH_THRESHOLD": "tool search switches on above this many tools",
    "OUTPUT_MODE": 'how structured output is asked for: `"json_schema"` or `"json_object"`',
    "LOG_PAYLOADS": "put tool arguments and results in logs and spans",
    "EVAL_DATASET": (
        "a YAML dataset file the admin's *Add to the eval dataset* appends cases to; unset: the action "
        "downloads them ([evals](../guides/evaluating.md))"
    ),
    "EVENTS_REDIS_URL": "Redis for the event streams, shared by web and worker processes; unset: kept in this process",
    "EVENTS_MAX_LEN": "events kept per conversation for readers that resume",
    "EVENTS_MAX_BYTES": (
        "bytes of events one process keeps without Redis, in all (32 MiB); least recently used conversations go first"
    ),
    "EVENTS_TTL": "seconds a conversation's events stay in Redis after its last one",
    "EVENTS_KEEPALIVE": "seconds between `: keepalive` comments on a quiet stream",
    "EVENTS_IDLE_TIMEOUT": "seconds without an event after which `GET …/events/` closes (the reader reconnects)",
}


def default_text(key: str, value: Any) -> str:
    """The default as a reader writes it in settings.py."""
    if value is None and key in FROM_ENVIRONMENT:
        return FROM_ENVIRONMENT[key]
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`"


def settings_table() -> str:
    missing, stale = sorted(set(DEFAULTS) - set(MEANINGS)), sorted(set(MEANINGS) - set(DEFAULTS))
    if missing or stale:
        raise PluginError(
            f"docs/hooks/settings_table.py is out of step with toolcalling/conf.py: "
            f"undocumented {missing}, no longer settings {stale}"
        )
    rows = [f"| `{key}` | {default_text(key, value)} | {MEANINGS[key]} |" for key, value in DEFAULTS.items()]
    return "\n".join(["| key | default | meaning |", "| --- | --- | --- |", *rows])


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, settings_table())
