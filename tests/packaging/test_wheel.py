"""``python -m build`` gives an sdist and a wheel that hold the whole app, pass ``twine check``, and set up a site."""

import re
import subprocess
import sys
import tarfile
import textwrap
import zipfile

import toolcalling
from tests.packaging.conftest import ROOT

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
    from django.utils import translation
    for language in ("ko", "de"):
        with translation.override(language):
            print("TRANSLATED", language, ToolCall._meta.verbose_name_plural)
    """
)


def app_files() -> set[str]:
    """The app's files in the checkout; dotfiles (a .gitkeep) are not shipped."""
    return {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "toolcalling").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
    }


def test_the_wheel_holds_the_app_its_migrations_templates_static_files_and_type_marker(dist):
    names = set(zipfile.ZipFile(dist.wheel).namelist())
    assert app_files() <= names, sorted(app_files() - names)
    assert {"toolcalling/migrations/0001_initial.py", "toolcalling/static/toolcalling/chat.js"} <= names
    assert "toolcalling/templates/toolcalling/chat.html" in names
    assert "toolcalling/py.typed" in names  # PEP 561: type checkers use the app's annotations
    assert not any(n.startswith(("tests/", "demo_site/")) for n in names)


def test_the_sdist_holds_the_app_and_the_changelog_but_not_the_tests(dist):
    with tarfile.open(dist.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert app_files() <= names, sorted(app_files() - names)
    assert {"README.md", "CHANGELOG.md", "pyproject.toml"} <= names
    assert not any(n.startswith(("tests/", "demo_site/")) for n in names)


def test_one_version_names_the_files_and_the_metadata(dist):
    version = toolcalling.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", version)
    assert dist.wheel.name == f"django_toolcalling-{version}-py3-none-any.whl"
    metadata = zipfile.ZipFile(dist.wheel).read(f"django_toolcalling-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert "Provides-Extra: openapi" in metadata
    assert f"## {version}" in (ROOT / "CHANGELOG.md").read_text()


def test_twine_check_passes(dist):
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.sdist), str(dist.wheel)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2


def test_the_korean_and_german_catalogs_are_in_the_wheel_compiled(dist):
    names = set(zipfile.ZipFile(dist.wheel).namelist())
    for language in ("ko", "de"):
        assert {f"toolcalling/locale/{language}/LC_MESSAGES/django.{kind}" for kind in ("po", "mo")} <= names


def test_the_installed_wheel_sets_up_a_fresh_site(dist, tmp_path):
    target = tmp_path / "site-packages"
    zipfile.ZipFile(dist.wheel).extractall(target)
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
    # The compiled catalogs in the wheel, found by Django like any app's.
    assert "TRANSLATED ko 도구 호출" in result.stdout and "TRANSLATED de Tool-Aufrufe" in result.stdout
