"""``pip install .`` gives a working app: the wheel alone (not this checkout) sets up a fresh site."""

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SITE = textwrap.dedent(
    """
    import django, sys
    from django.conf import settings
    settings.configure(
        INSTALLED_APPS=["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                        "django.contrib.sessions", "django.contrib.messages", "rest_framework", "toolcalling"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        ROOT_URLCONF="toolcalling.urls", USE_TZ=True, SECRET_KEY="x",
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
                    "OPTIONS": {"context_processors": ["django.contrib.auth.context_processors.auth",
                                                       "django.contrib.messages.context_processors.messages",
                                                       "django.template.context_processors.request"]}}],
        MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware",
                    "django.contrib.auth.middleware.AuthenticationMiddleware",
                    "django.contrib.messages.middleware.MessageMiddleware"],
    )
    django.setup()
    import toolcalling
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    call_command("check")
    from toolcalling.models import ToolCall
    print("LOADED FROM", toolcalling.__file__)
    print("MIGRATED", ToolCall.objects.count())
    """
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("django_toolcalling-*.whl")
    return path


def test_the_wheel_holds_the_app_its_migrations_and_templates(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    repo_files = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "toolcalling").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert repo_files <= names, sorted(repo_files - names)
    assert "toolcalling/migrations/0001_initial.py" in names
    assert not any(n.startswith(("tests/", "demo_site/")) for n in names)


def test_the_installed_wheel_sets_up_a_fresh_site(wheel, tmp_path):
    target = tmp_path / "site-packages"
    zipfile.ZipFile(wheel).extractall(target)
    result = subprocess.run(
        [sys.executable, "-c", SITE],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert f"LOADED FROM {target}" in result.stdout
    assert "MIGRATED 0" in result.stdout
