"""Settings of the demo shop: a small site that uses django-toolcalling the way a user's site would."""

import os
from importlib.util import find_spec
from pathlib import Path

import django

from demo_site import languages

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

# A fixed fallback key is fine for a local demo with known passwords; set DJANGO_SECRET_KEY anywhere else.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-not-secret")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
# Where `make demo` listens: this machine only, unless HOST says otherwise (the demo's passwords are public).
DEMO_HOST = os.environ.get("HOST") or "127.0.0.1"
DEMO_PORT = int(os.environ.get("PORT") or 8000)
LOOPBACK = ["127.0.0.1", "localhost", "[::1]"]
ALLOWED_HOSTS = (
    os.environ["DJANGO_ALLOWED_HOSTS"].split(",")
    if os.environ.get("DJANGO_ALLOWED_HOSTS")
    else (LOOPBACK if DEMO_HOST in LOOPBACK else ["*"])
)

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en"
# German and Korean as the app ships them; the page's switcher, `LANG=ko make demo` or the browser picks one.
LANGUAGES = languages.LANGUAGES
DEMO_LANGUAGE = languages.started_in()
LOCALE_PATHS = [BASE_DIR / "demo_site" / "locale"]  # the demo's own words (its pages' headers and sign-in)
ROOT_URLCONF = "demo_site.urls"
WSGI_APPLICATION = "demo_site.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",  # the README's curl examples use a token; `make demo` prints alice's
    "toolcalling",
    "demo_site.shop",
]
# The API's OpenAPI schema at /api/schema/, when drf-spectacular is installed (`make demo` installs it).
DEMO_OPENAPI = find_spec("drf_spectacular") is not None
if DEMO_OPENAPI:
    INSTALLED_APPS.append("drf_spectacular")
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "demo_site.languages.DemoLocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": VAR_DIR / "demo.sqlite3",
        # The web server and a Celery worker write to one file: wait for locks, take them up front, use WAL.
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            # WAL with synchronous=NORMAL: readers never wait for the writer, and a commit does not wait for the disk.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}

STATIC_URL = "/static/"
MEDIA_ROOT = VAR_DIR / "media"  # the default storage: attachments users send
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
# Approval notices go to the console. Django 6.1 configures mail in MAILERS and deprecates EMAIL_BACKEND.
if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",  # the chat page
        "rest_framework.authentication.TokenAuthentication",  # scripts and curl: Authorization: Token <key>
    ],
}
if DEMO_OPENAPI:
    REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "drf_spectacular.openapi.AutoSchema"
    SPECTACULAR_SETTINGS = {"TITLE": "Demo shop API", "VERSION": "1"}

# A real model when an endpoint is configured; otherwise the built-in offline model, so the demo needs no key.
DEMO_USES_OFFLINE_MODEL = not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))
if DEMO_USES_OFFLINE_MODEL:
    TOOLCALLING = {"OFFLINE_MODEL": True}  # its answers are stored with the model name "offline"
    # Priced as the model it stands in for, so the admin's spend page shows what real turns would cost.
    TOOLCALLING["PRICES"] = {"gpt-4o-mini": {"input": "0.15", "cached_input": "0.075", "output": "0.60"}}
else:
    TOOLCALLING = {"MODEL": os.environ.get("TOOLCALLING_MODEL", "gpt-4o-mini")}
# Where the approval e-mails' links point; set SITE_URL when the demo is reached under another address.
TOOLCALLING["SITE_URL"] = os.environ.get("SITE_URL", f"http://localhost:{DEMO_PORT}")

# With REDIS_URL a worker runs approved tool calls; without it they run inside the approving request.
CELERY_BROKER_URL = os.environ.get("REDIS_URL")
CELERY_RESULT_BACKEND = None
CELERY_DB_REUSE_MAX = 1000  # with demo_site/celery.py: connections live as CONN_MAX_AGE says (README)
if not CELERY_BROKER_URL:
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"toolcalling": {"handlers": ["console"], "level": "INFO"}},
}
