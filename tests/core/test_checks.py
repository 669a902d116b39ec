"""System checks for Celery wiring mistakes, each seen as a site would see it: a fresh process with its own settings."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SITE = textwrap.dedent(
    """
    import json, sys
    import django
    from django.conf import settings

    options = json.loads(sys.argv[1])
    for name in options["missing"]:  # a package the site did not install
        sys.modules[name] = None
    settings.configure(
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "rest_framework", "toolcalling",
                        *options["apps"]],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", **options["database"]}},
        USE_TZ=True, SECRET_KEY="x",
        TOOLCALLING={"OFFLINE_MODEL": True, "SITE_URL": "https://shop.example", **options["toolcalling"]},
        **options["settings"],
    )
    if options["celery_app"]:  # what yoursite/celery.py does, when yoursite/__init__.py imports it
        import os
        from celery import Celery
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "yoursite.settings")  # settings.configure() made them
        app = Celery("yoursite")
        app.config_from_object("django.conf:settings", namespace="CELERY")
    django.setup()
    from django.core.checks import run_checks
    print(json.dumps({m.id: {"msg": str(m.msg), "hint": str(m.hint)} for m in run_checks(tags=["toolcalling"])}))
    """
)

GATED = ["tests.testapp"]  # has delete_everything, which requires approval


def checks_of(
    *, apps=GATED, celery_app=True, toolcalling=None, database=None, missing=(), **settings
) -> dict[str, dict[str, str]]:
    options = {"apps": apps, "celery_app": celery_app, "toolcalling": toolcalling or {}, "database": database or {},
               "settings": settings, "missing": list(missing)}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    result = subprocess.run(
        [sys.executable, "-c", SITE, json.dumps(options)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_gated_tools_without_a_celery_app_are_an_error_naming_the_fix():
    # Even "eager" fails then: without the site's app, nobody reads the CELERY_* settings.
    found = checks_of(celery_app=False, CELERY_TASK_ALWAYS_EAGER=True, CELERY_BROKER_URL="redis://localhost:1/0")
    error = found["toolcalling.E004"]
    assert "delete_everything" in error["msg"] and "amqp://localhost" in error["msg"]
    assert "from .celery import app as celery_app" in error["hint"]
    assert "DJANGO_SETTINGS_MODULE" in error["hint"]


def test_a_site_without_gated_tools_needs_no_celery_app():
    assert "toolcalling.E004" not in checks_of(apps=[], celery_app=False)


def test_gated_tools_with_an_app_but_no_broker_are_a_warning_naming_the_fix():
    found = checks_of(CELERY_TASK_ALWAYS_EAGER=False)
    assert "toolcalling.E004" not in found
    warning = found["toolcalling.W003"]
    assert "delete_everything" in warning["msg"] and "'yoursite'" in warning["msg"]
    assert "CELERY_BROKER_URL" in warning["hint"] and "CELERY_TASK_ALWAYS_EAGER = True" in warning["hint"]


def test_an_eager_site_without_a_broker_is_fine():
    assert checks_of(CELERY_TASK_ALWAYS_EAGER=True) == {}


def test_a_worker_without_shared_events_is_a_warning_naming_the_fix():
    found = checks_of(CELERY_BROKER_URL="redis://localhost:6379/0")
    assert set(found) == {"toolcalling.W004"}
    assert "EVENTS_REDIS_URL" in found["toolcalling.W004"]["msg"]
    assert 'TOOLCALLING["EVENTS_REDIS_URL"]' in found["toolcalling.W004"]["hint"]


def test_a_worker_with_shared_events_is_fine():
    shared = {"EVENTS_REDIS_URL": "redis://localhost:6379/1"}
    assert checks_of(CELERY_BROKER_URL="redis://localhost:6379/0", toolcalling=shared) == {}


WORKER = {
    "CELERY_BROKER_URL": "redis://localhost:6379/0",
    "toolcalling": {"EVENTS_REDIS_URL": "redis://localhost:6379/1"},
}


def test_persistent_connections_that_workers_would_close_are_a_warning_naming_the_fix():
    found = checks_of(database={"CONN_MAX_AGE": 600}, **WORKER)
    assert set(found) == {"toolcalling.W005"}
    assert "CONN_MAX_AGE" in found["toolcalling.W005"]["msg"]
    hint = found["toolcalling.W005"]["hint"]
    assert "CELERY_DB_REUSE_MAX" in hint and "close_old_connections()" in hint
    assert set(checks_of(database={"CONN_MAX_AGE": None}, **WORKER)) == {"toolcalling.W005"}  # None: unlimited


def test_workers_that_keep_persistent_connections_are_fine():
    assert checks_of(database={"CONN_MAX_AGE": 600}, CELERY_DB_REUSE_MAX=1000, **WORKER) == {}


def test_connections_closed_after_each_request_or_eager_tasks_need_nothing():
    assert checks_of(database={"CONN_MAX_AGE": 0}, **WORKER) == {}
    assert checks_of(database={"CONN_MAX_AGE": 600}, CELERY_TASK_ALWAYS_EAGER=True) == {}


EAGER = {"CELERY_TASK_ALWAYS_EAGER": True}


def test_a_reasoning_model_with_tools_on_chat_completions_is_a_warning_naming_the_fix():
    found = checks_of(toolcalling={"MODEL": "gpt-5.4"}, **EAGER)
    assert set(found) == {"toolcalling.W006"}
    message = found["toolcalling.W006"]["msg"]  # one per assistant with tools; the last one is kept here
    assert message.startswith("Assistant '") and "the model 'gpt-5.4' on the Chat Completions API" in message
    assert found["toolcalling.W006"]["hint"] == 'Set TOOLCALLING["API"] (or the assistant\'s api) to "responses".'


def test_a_reasoning_model_on_the_responses_api_or_without_tools_needs_nothing():
    assert checks_of(toolcalling={"MODEL": "gpt-5.4", "API": "responses"}, **EAGER) == {}
    assert checks_of(apps=[], toolcalling={"MODEL": "o4-mini"}, **EAGER) == {}  # no assistant offers tools
    assert checks_of(toolcalling={"MODEL": "gpt-4.1"}, **EAGER) == {}


def test_the_anthropic_api_needs_nothing_when_its_sdk_is_installed():
    assert checks_of(toolcalling={"API": "anthropic", "MODEL": "claude-sonnet-4-5"}, **EAGER) == {}


def test_the_anthropic_api_without_its_sdk_is_an_error_naming_the_extra():
    found = checks_of(toolcalling={"API": "anthropic"}, missing=["anthropic"], **EAGER)
    assert set(found) == {"toolcalling.E006"}
    assert "'anthropic' package, which is not installed" in found["toolcalling.E006"]["msg"]
    assert "pip install django-toolcalling[anthropic]" in found["toolcalling.E006"]["msg"]
    assert found["toolcalling.E006"]["hint"] == "Install the package it names, or choose another API."
    assert checks_of(missing=["anthropic"], **EAGER) == {}  # a site that does not use it needs no SDK


def test_an_unknown_api_is_a_settings_error():
    found = checks_of(toolcalling={"API": "chat"}, **EAGER)
    assert "toolcalling.E001" in found
    assert "'chat_completions', 'responses', 'anthropic'" in found["toolcalling.E001"]["msg"]
