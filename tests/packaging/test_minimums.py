"""The wheel with every dependency at the lowest version pyproject.toml declares: it installs, sets up a site and runs
a turn with a tool call through the real SDK against the strict local server. A minimum that only installs
(``openai>=2``, whose 2.x refuses the httpx2 clients the app passes it) fails here.

Its own virtualenv and no database of the suite's: one run is enough (the PostgreSQL and MariaDB passes skip it)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from django.conf import settings
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.packaging.conftest import ROOT, Dist

# name>=minimum, with extras and further bounds ("celery[redis]>=5.4", "genai-prices>=0.2.3,<0.3").
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)")

TURN = textwrap.dedent(
    """
    import django
    from django.conf import settings
    from toolcalling.testing import OpenAICompatibleServer, ScriptedModel

    model = ScriptedModel()
    server = OpenAICompatibleServer(model).__enter__()
    settings.configure(
        INSTALLED_APPS=["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                        "django.contrib.sessions", "django.contrib.messages", "rest_framework", "toolcalling"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        ROOT_URLCONF="toolcalling.urls", USE_TZ=True, SECRET_KEY="x", ALLOWED_HOSTS=["testserver"],
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
                    "OPTIONS": {"context_processors": ["django.contrib.auth.context_processors.auth",
                                                       "django.contrib.messages.context_processors.messages",
                                                       "django.template.context_processors.request"]}}],
        MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware",
                    "django.contrib.auth.middleware.AuthenticationMiddleware",
                    "django.contrib.messages.middleware.MessageMiddleware"],
        TOOLCALLING={"MODEL": "gpt-4o-mini", "API_KEY": "test-key", "BASE_URL": server.base_url},
        SILENCED_SYSTEM_CHECKS=["toolcalling.W007"],
    )
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.test import APIClient
    from toolcalling import Assistant, ToolContext, tool
    import toolcalling.tasks  # the Celery tasks import on the lowest celery too

    @tool
    def add(ctx: ToolContext, a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

    class Calculator(Assistant):
        id = "calc"
        name = "Calculator"
        instructions = "Use the tools."
        tools = [add]

    call_command("migrate", verbosity=0)
    call_command("check")
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("alice"))
    conversation = client.post("/conversations/", {"assistant": "calc"}, format="json").json()["id"]
    model.call("add", {"a": 2, "b": 3})
    model.reply("2 + 3 = 5")
    answer = client.post(f"/conversations/{conversation}/messages/", {"content": "2 + 3?"}, format="json")
    assert answer.status_code == 201, answer.content
    messages = answer.json()["messages"]
    print("TOOL", [m["content"] for m in messages if m["role"] == "tool"])
    print("REPLY", messages[-1]["content"])
    model.assert_done()
    server.__exit__(None, None, None)
    """
)


def declared_minimums() -> dict[str, str]:
    """Every runtime dependency of pyproject.toml and its lowest version, which each must name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    minimums = {}
    for requirement in project["dependencies"]:
        match = REQUIREMENT.match(requirement)
        assert match, f"{requirement!r} names no lowest version"
        minimums[match[1]] = match[2]
    return minimums


def test_every_runtime_dependency_names_its_lowest_version():
    minimums = declared_minimums()
    # What the app imports itself, beside Django's and pydantic's own parts.
    assert {"django", "djangorestframework", "asgiref", "celery", "redis", "pydantic", "openai", "httpx2"} <= set(
        minimums
    )
    assert int(minimums["openai"].split(".")[0]) >= 3  # 2.x installs, but its clients are httpx ones


@pytest.mark.skipif(settings.DATABASE != "sqlite", reason="independent of the suite's database: run on SQLite")
@pytest.mark.timeout(300)
def test_the_wheel_with_every_declared_minimum_runs_a_turn(dist: Dist, tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pins = tmp_path / "minimums.txt"
    pins.write_text("".join(f"{name}=={version}\n" for name, version in declared_minimums().items()))
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "--disable-pip-version-check"]
    install = [*pip, "install", "--quiet", "--no-compile", "-c", str(pins), str(dist.wheel)]
    installed = subprocess.run(install, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr[-3000:]
    listed = subprocess.run([*pip, "freeze"], capture_output=True, text=True, check=True).stdout
    frozen = dict(line.split("==", 1) for line in listed.splitlines() if "==" in line)
    frozen = {canonicalize_name(name): Version(version) for name, version in frozen.items()}
    for name, version in declared_minimums().items():
        assert frozen.get(canonicalize_name(name)) == Version(version), f"{name} {version} not installed: {listed}"

    result = subprocess.run(
        [str(venv / "bin/python"), "-c", TURN],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "TOOL ['5']" in result.stdout and "REPLY 2 + 3 = 5" in result.stdout, result.stdout
