"""A newcomer's first hour on a Wagtail site: ``wagtail start``, then docs/existing-project.md followed literally
(its marked blocks, ``<!-- existing-project: ... -->``, are read from the page, never copied here), the built
wheel in a fresh virtualenv, a real Redis and Celery worker, a chat through the API with the strict model server,
and an approval-gated unpublish that the worker runs.

The only changes made to the page's commands: ``createsuperuser`` gets ``--noinput`` (its answers come from the
environment), and the servers the page names get a free port and test-friendly worker options.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from django.conf import settings

from tests import services
from tests.packaging.conftest import ROOT, Dist, dist  # noqa: F401 - the session's one build of the wheel
from tests.projects import ProjectDirectory
from toolcalling.testing import OpenAICompatibleServer, Reply, ScriptedModel, ToolCall

PAGE = ROOT / "docs/existing-project.md"
MARK = re.compile(r"<!-- existing-project: (\w+)(?: (\S+))? -->\s*\n```\w*\n(.*?)\n```", re.DOTALL)

pytestmark = [
    # Its own site, database and services: one run of the suite is enough (the PostgreSQL and MariaDB passes skip
    # it), and its set-up (a virtualenv, Wagtail's migrations, two servers) takes longer than the usual 120 s.
    pytest.mark.skipif(settings.DATABASE != "sqlite", reason="independent of the suite's database: run on SQLite"),
    pytest.mark.timeout(600),  # on two shared cores its set-up alone took 175 to 260 s
]


def page_blocks() -> list[tuple[str, str, str]]:
    blocks = MARK.findall(PAGE.read_text())
    assert {action for action, _, _ in blocks} == {"run", "create", "append"}, blocks
    return blocks


@pytest.fixture(scope="module")
def venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811 - the imported fixture
    """The wheel, the pinned requirements and Wagtail, in a virtualenv of the site's own."""
    where = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(where / "bin/python"), "--disable-pip-version-check"]
    requirements = ["-r", str(ROOT / "requirements/base.txt"), "-r", str(ROOT / "requirements/newcomer.txt")]
    result = subprocess.run(
        [*pip, "install", "--quiet", "--no-compile", *requirements, str(dist.wheel)], capture_output=True
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return where


class Site(ProjectDirectory):
    """The Wagtail site (its virtualenv first on PATH)."""

    def shell(self, code: str) -> str:
        return self.run(f"python manage.py shell -c {shlex.quote(code)}")

    def write(self, action: str, name: str, text: str) -> None:
        path = self.root / name
        assert text.startswith(f"# {name}"), f"the block for {name} should say where it goes"
        if action == "create":
            assert not path.exists(), f"{name} should be new"
            path.write_text(text + "\n")
        else:
            assert path.exists(), f"{name} should exist before the page adds to it"
            path.write_text(path.read_text() + "\n\n" + text + "\n")

    def start(self, argv: list[str], log: Path) -> subprocess.Popen:
        return self.popen(argv, log)


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[ScriptedModel, str]]:
    scripted = ScriptedModel()
    with OpenAICompatibleServer(scripted) as server:
        yield scripted, server.base_url


@pytest.fixture(scope="module")
def site(venv, model, tmp_path_factory) -> Iterator[tuple[Site, str]]:
    """The Wagtail site after the page's steps, with its worker and web server running."""
    _, base_url = model
    root = tmp_path_factory.mktemp("mysite")
    with services.redis_server(tmp_path_factory.mktemp("redis"), services.free_port()) as redis_url:
        env = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "LC_ALL", "TMPDIR")}
        env.update(
            PATH=f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            REDIS_URL=redis_url + "/0",
            OPENAI_BASE_URL=base_url,
            OPENAI_API_KEY="test-key",
            DJANGO_SUPERUSER_USERNAME="admin",
            DJANGO_SUPERUSER_EMAIL="admin@example.com",
            DJANGO_SUPERUSER_PASSWORD="admin-password-1234",
        )
        project = Site(root, venv, env)
        for action, name, text in page_blocks():
            if action == "run":
                lines = [line.split(" #", 1)[0].strip() for line in text.splitlines()]
                for line in lines:
                    if line and not line.startswith("#"):
                        project.run(line)
            else:
                project.write(action, name, text)
        port = services.free_port()
        worker_log, web_log = root / "celery.log", root / "runserver.log"
        # The page's commands: "celery -A mysite worker -l info" and runserver, as in the tutorial.
        worker = project.start(
            [
                "celery",
                "-A",
                "mysite",
                "worker",
                "-l",
                "info",
                "--concurrency=1",
                "--without-gossip",
                "--without-mingle",
            ],
            worker_log,
        )
        web = project.start(["python", "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"], web_log)
        try:
            services.wait_until(lambda: "ready." in worker_log.read_text(), timeout=60, what="the site's worker")
            services.wait_until(lambda: answers(f"http://127.0.0.1:{port}/"), timeout=60, what="the site's runserver")
            yield project, f"http://127.0.0.1:{port}"
        finally:
            services.stop_worker(worker, worker_log)
            services.stop_worker(web, web_log)


def answers(url: str) -> bool:
    try:
        return httpx2.get(url, timeout=2).status_code == 200
    except httpx2.TransportError:
        return False


def unpublish_what_was_found(body: dict) -> Reply:
    """The model's second answer: unpublish the page the first call found (its id is in the tool's result)."""
    (found,) = json.loads(body["messages"][-1]["content"])
    return Reply(tool_calls=[ToolCall(name="unpublish_page", arguments={"page_id": found["id"]})])


def test_a_wagtail_site_following_the_page_chats_and_unpublishes_a_page_on_its_worker(site, model):
    project, base = site
    scripted, _ = model
    checked = project.outputs["python manage.py check"]
    assert "toolcalling.W008" not in checked and "ERRORS" not in checked, checked  # the API is reachable
    # Wagtail's catch-all still serves its pages after the app's URLs were put first, and Django's admin, where
    # the page says the desk is, answers under /django-admin/.
    assert httpx2.get(base + "/", timeout=10).status_code == 200
    # The mistake the page warns of, on this very site: the app's URLs after Wagtail's catch-all are named by
    # manage.py check, with Wagtail's pattern and view.
    appended = project.shell(
        "from types import ModuleType; from django.core.checks import run_checks; "
        "from django.test import override_settings; from mysite import urls; "
        "module = ModuleType('appended'); module.urlpatterns = [*urls.urlpatterns[1:], urls.urlpatterns[0]]; "
        "override = override_settings(ROOT_URLCONF=module); override.enable(); "
        "print([str(m.msg) for m in run_checks(tags=['toolcalling']) if m.id == 'toolcalling.W008'])"
    )
    assert "wagtail.views.serve" in appended and "/api/toolcalling/assistants/ is answered by" in appended, appended
    desk = httpx2.get(base + "/django-admin/toolcalling/toolcall/", timeout=10)
    assert desk.status_code == 302 and desk.headers["location"].startswith("/django-admin/login/")

    # An editor (Wagtail's Moderators may publish and unpublish) chats; the superuser decides. One shell for both
    # tokens: each command on a Wagtail site starts Django anew, which is most of this test's time.
    tokens = project.shell(
        "from django.contrib.auth.models import Group, User; from rest_framework.authtoken.models import Token; "
        "editor = User.objects.create_user('editor', 'editor@example.com'); "
        "editor.groups.add(Group.objects.get(name='Moderators')); "
        "admin = User.objects.get(username='admin'); "
        "print(Token.objects.create(user=editor).key, Token.objects.create(user=admin).key)"
    )
    editor_key, staff_key = tokens.splitlines()[-1].split()
    editor = {"Authorization": f"Token {editor_key}"}
    staff = {"Authorization": f"Token {staff_key}"}
    api = f"{base}/api/toolcalling/"
    with httpx2.Client(timeout=30) as http:
        assert [a["id"] for a in http.get(api + "assistants/", headers=editor).json()] == ["pages"]
        conversation = http.post(api + "conversations/", json={"assistant": "pages"}, headers=editor).json()["id"]
        scripted.call("find_pages", {"title": "Home"})
        scripted.respond(unpublish_what_was_found)
        url = api + f"conversations/{conversation}/messages/"
        answer = http.post(url, json={"content": "Take the home page off the site"}, headers=editor)
        assert answer.status_code == 201, answer.text
        found = json.loads(answer.json()["messages"][2]["content"])
        assert [page["title"] for page in found] == ["Home"]
        (waiting,) = answer.json()["awaiting_approval"]
        assert (waiting["name"], waiting["label"]) == ("unpublish_page", "Unpublish a page")
        assert waiting["arguments"] == {"page_id": found[0]["id"]}
        assert httpx2.get(base + "/", timeout=10).status_code == 200, "nothing runs before the decision"

        # The superuser approves: the worker unpublishes as the editor and the model's answer follows.
        scripted.reply("The home page is off the site.")
        approved = http.post(api + f"tool-calls/{waiting['id']}/approve/", headers=staff)
        assert approved.status_code == 200, approved.text

        def idle() -> dict | None:
            state = http.get(api + f"conversations/{conversation}/", headers=editor).json()
            return state if state["status"] == "idle" else None

        services.wait_until(idle, timeout=60, what="the worker to run the call and continue the conversation")
        history = http.get(url, headers=editor).json()
    assert [m["content"] for m in history[-2:]] == ["“Home” is no longer live.", "The home page is off the site."]
    (call,) = [c for m in history for c in m["tool_calls"] if c["name"] == "unpublish_page"]
    assert call["status"] == "succeeded"
    live = project.shell(f"from wagtail.models import Page; print(Page.objects.get(id={found[0]['id']}).live)")
    assert live.splitlines()[-1] == "False"  # after the shell's own line on the models it imported
    assert httpx2.get(base + "/", timeout=10).status_code == 404  # Wagtail serves no unpublished page
    scripted.assert_done()
