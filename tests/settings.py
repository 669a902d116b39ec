"""Settings of the test site: the app plus a tiny test app with its own tools and assistants."""

import importlib.util
import os

import django
from django.core.exceptions import ImproperlyConfigured

from tests.mariadb import CHARSET, COLLATION, MARIADB_PASSWORD, MARIADB_USER
from tests.services import POSTGRES_USER, free_port, run_directory

# A temporary directory of this run, outside the checkout; worker processes inherit it (TOOLCALLING_TEST_VAR).
VAR_DIR = run_directory()

SECRET_KEY = "tests-only"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
SITE_ID = 1

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.sites",  # notifications fall back to it for absolute links when SITE_URL is unset
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "toolcalling",
    "tests.testapp",
    "tests.approvalapp",
    "demo_site.shop",  # the demo shop is tested like any site using the app
    # Django's Tasks framework's database backend, for the tests that run the background jobs with
    # TOOLCALLING["TASKS"] = "django" on a db_worker process (tests/services.py); before Django 6 the backport too.
    *(["django_tasks"] if django.VERSION < (6, 0) else []),
    "django_tasks_db",
]
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": []}}  # QUEUES []: any queue
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
# TOOLCALLING_TEST_DATABASE picks the database the whole suite runs on: "sqlite" (default), "postgresql", a
# private cluster the tests start in VAR_DIR (tests/conftest.py), reached through its socket there, or "mariadb",
# a private MariaDB server the tests start in VAR_DIR, reached over TCP on a free port of 127.0.0.1.
DATABASE = os.environ.get("TOOLCALLING_TEST_DATABASE", "sqlite")
if DATABASE == "sqlite":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            # A file, not memory: a Celery worker process shares the test database.
            "TEST": {"NAME": VAR_DIR / "test_db.sqlite3"},
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                # WAL with synchronous=NORMAL: readers never wait for the writer, and a commit does not wait for
                # the disk.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
elif DATABASE == "postgresql":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "toolcalling",
            "USER": POSTGRES_USER,
            "HOST": str(VAR_DIR / "postgres"),
            "CONN_HEALTH_CHECKS": True,
        }
    }
elif DATABASE == "mariadb":
    if importlib.util.find_spec("MySQLdb") is None:
        raise ImproperlyConfigured("TOOLCALLING_TEST_DATABASE=mariadb needs mysqlclient (make test installs it)")
    # Chosen once per run and inherited by worker processes, like the Redis port below.
    MARIADB_PORT = int(os.environ.setdefault("TOOLCALLING_TEST_MARIADB_PORT", str(free_port())))
    DATABASES = {
        "default": {
            # As a production site connects: over TCP, utf8mb4, and Django's default READ COMMITTED isolation.
            "ENGINE": "django.db.backends.mysql",
            "NAME": "toolcalling",
            "USER": MARIADB_USER,
            "PASSWORD": MARIADB_PASSWORD,
            "HOST": "127.0.0.1",
            "PORT": MARIADB_PORT,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {"charset": CHARSET},
            "TEST": {"CHARSET": CHARSET, "COLLATION": COLLATION},
        }
    }
else:
    raise ImproperlyConfigured(f"TOOLCALLING_TEST_DATABASE is {DATABASE!r}: use 'sqlite', 'postgresql' or 'mariadb'")
# Persistent connections, as a production site sets them (the benchmarks and a worker test do; tests close them).
DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("TOOLCALLING_TEST_CONN_MAX_AGE", 0))
if DATABASE == "postgresql" and os.environ.get("TOOLCALLING_TEST_PG_POOL"):
    # Django's connection pool (psycopg_pool), as an ASGI site on PostgreSQL configures it: each request's thread
    # takes a connection from the pool and gives it back, instead of connecting anew (the benchmarks under uvicorn).
    DATABASES["default"]["OPTIONS"] = {"pool": {"min_size": 2, "max_size": int(os.environ["TOOLCALLING_TEST_PG_POOL"])}}
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # a pooled connection goes back to the pool when Django closes it
# The same database through a second connection (a test mirror of "default"): tests with a database router send
# the app's writes here and its reads to "default", so a write, or a read that decides one, on the wrong alias shows.
DATABASES["writes"] = {**DATABASES["default"], "TEST": {"MIRROR": "default"}}
if DATABASE == "postgresql":
    # The same database through Django's connection pool (PostgreSQL's only), a small one: tests with a router
    # to it show that the app gives pooled connections back instead of keeping one per thread.
    DATABASES["pooled"] = {**DATABASES["default"], "CONN_MAX_AGE": 0, "TEST": {"MIRROR": "default"},
                           "OPTIONS": {"pool": {"min_size": 1, "max_size": 2, "timeout": 5}}}  # fmt: skip
STATIC_URL = "/static/"
MEDIA_ROOT = VAR_DIR / "media"  # the default storage, where attachments are kept
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Many tests post as one user within a minute; the throttle's own tests switch it on.
    "DEFAULT_THROTTLE_RATES": {"toolcalling_turn": None, "toolcalling_upload": None},
}
SPECTACULAR_SETTINGS = {"TITLE": "toolcalling test site", "VERSION": "1"}
TOOLCALLING = {
    "MODEL": "test-model",
    "API_KEY": "test-key",
    "BASE_URL": "http://127.0.0.1:9/v1",
    "MAX_RETRIES": 0,
    # Not the environment's REDIS_URL: tests that want Redis events start their own server.
    "EVENTS_REDIS_URL": os.environ.get("TOOLCALLING_TEST_EVENTS_REDIS_URL", ""),
    "SITE_URL": "http://testserver",  # the test client's host: links in notifications are absolute
}
# The test models have no price on purpose (tests set PRICES where they price answers): W007 says so for each.
SILENCED_SYSTEM_CHECKS = ["toolcalling.W007"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
# Celery's Django fixup would close every database connection around every task; the Celery app closes
# the old ones instead, as Django does around a request (tests/celery_app.py).
CELERY_DB_REUSE_MAX = 1000


# The approval tests start a private redis-server on this port; a free one, chosen once per run and
# inherited by the worker process, so two test runs on one machine never share a broker.
REDIS_PORT = int(os.environ.setdefault("TOOLCALLING_TEST_REDIS_PORT", str(free_port())))
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", f"redis://127.0.0.1:{REDIS_PORT}/0")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", f"redis://127.0.0.1:{REDIS_PORT}/1")

# The approval tests start a real Celery worker with these variables set: it uses the Redis broker
# (not eager mode), opens pytest-django's test database, and talks to the tests' model server.
if os.environ.get("TOOLCALLING_TEST_WORKER"):
    CELERY_TASK_ALWAYS_EAGER = False
    DATABASES["default"]["NAME"] = os.environ["TOOLCALLING_TEST_DB_NAME"]
    TOOLCALLING["BASE_URL"] = os.environ["TOOLCALLING_TEST_BASE_URL"]
    # A db_worker (tests/services.py): the jobs it runs queue the jobs after them as Django Tasks too.
    TOOLCALLING["TASKS"] = os.environ.get("TOOLCALLING_TEST_TASKS", "celery")
    if os.environ.get("TOOLCALLING_TEST_NO_MODEL"):  # a worker started without the model's settings
        del TOOLCALLING["API_KEY"], TOOLCALLING["BASE_URL"]

# The chaos run (bench/chaos.py) kills processes: a turn or a run that goes quiet is taken over within seconds.
if os.environ.get("TOOLCALLING_CHAOS_STALE_AFTER"):
    TOOLCALLING["STALE_TURN_TIMEOUT"] = int(os.environ["TOOLCALLING_CHAOS_STALE_AFTER"])
    TOOLCALLING["APPROVAL_RUN_TIMEOUT"] = int(os.environ["TOOLCALLING_CHAOS_STALE_AFTER"])

# Mail as a new site configures it: MAILERS from Django 6.1 on (its startproject writes it; EMAIL_BACKEND is
# deprecated there), EMAIL_BACKEND before. The test runner keeps either in memory. The MCP stdio tests start the
# command with approval e-mails on the console backend, as the demo site has them, to see that none of it reaches
# the protocol's stdout (tests/testapp/apps.py connects the receiver).
console_mail = bool(os.environ.get("TOOLCALLING_TEST_CONSOLE_MAIL"))
if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"} if console_mail else {}}
elif console_mail:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
