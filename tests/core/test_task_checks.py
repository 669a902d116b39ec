"""System checks of Django's Tasks framework as the runner (TOOLCALLING["TASKS"] = "django"), each seen as a site
would see it: a fresh process with its own settings (``checks_of``)."""

from tests.core.test_checks import checks_of
from toolcalling._task_framework import DummyBackend

TASKS_APPS = ["tests.testapp", "django_tasks", "django_tasks_db"]  # gated tools, the framework and its backend
DATABASE_BACKEND = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
DJANGO = {"TASKS": "django", "EVENTS_REDIS_URL": ""}


def test_a_site_on_django_tasks_with_a_database_backend_needs_no_celery_app_broker_or_redis():
    assert checks_of(apps=TASKS_APPS, celery_app=False, toolcalling=DJANGO, TASKS=DATABASE_BACKEND) == {}
    # The same site on Celery: every Celery problem is named.
    assert "toolcalling.E004" in checks_of(apps=TASKS_APPS, celery_app=False, TASKS=DATABASE_BACKEND)


def test_the_immediate_backend_django_gives_without_settings_tasks_is_a_warning_naming_the_worker():
    found = checks_of(apps=TASKS_APPS, celery_app=False, toolcalling=DJANGO)
    assert set(found) == {"toolcalling.W009"}
    assert "immediate" in found["toolcalling.W009"]["msg"]
    assert "django_tasks_db.DatabaseBackend" in found["toolcalling.W009"]["hint"]
    assert "manage.py db_worker" in found["toolcalling.W009"]["hint"]


def test_a_dummy_backend_that_never_runs_tasks_is_an_error():
    # Django's own from 6.0 (django.tasks.backends.dummy), the backport's before.
    dummy = {"default": {"BACKEND": f"{DummyBackend.__module__}.{DummyBackend.__name__}"}}
    found = checks_of(apps=TASKS_APPS, celery_app=False, toolcalling=DJANGO, TASKS=dummy)
    assert set(found) == {"toolcalling.E011"}
    assert "never runs them" in found["toolcalling.E011"]["msg"]


def test_a_backend_that_cannot_be_loaded_is_an_error_naming_it():
    missing = {"default": {"BACKEND": "yoursite.tasks_backend.Missing"}}
    found = checks_of(apps=TASKS_APPS, celery_app=False, toolcalling=DJANGO, TASKS=missing)
    assert set(found) == {"toolcalling.E011"}
    assert "yoursite.tasks_backend.Missing" in found["toolcalling.E011"]["msg"]
    assert "manage.py db_worker" in found["toolcalling.E011"]["hint"]


def test_a_site_without_the_framework_is_told_what_to_install():
    # Neither Django 6's django.tasks nor the backport: a Django 5.2 site that did not install the [tasks] extra.
    found = checks_of(
        apps=["tests.testapp"], celery_app=False, toolcalling=DJANGO, missing=["django.tasks", "django_tasks"]
    )
    assert set(found) == {"toolcalling.E010"}
    assert "django-toolcalling[tasks]" in found["toolcalling.E010"]["hint"]


def test_a_site_on_celery_is_not_asked_about_task_backends():
    assert "toolcalling.W009" not in checks_of(CELERY_TASK_ALWAYS_EAGER=True)
