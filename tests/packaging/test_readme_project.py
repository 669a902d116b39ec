"""The tutorial's setup, followed literally: a fresh project built from its own code blocks, the built wheel in a
fresh virtualenv, migrations, a worker, then a chat, a staff approval and a stream. Twice: with a real Redis and
Celery worker, and without Celery, on Django's Tasks framework with django-tasks-db's ``db_worker`` and no Redis.

The blocks are read from the tutorial page, docs/tutorial.md, never copied here, so the page cannot drift from what
works: ``<!-- tutorial: ... -->`` marks a block of both ways, ``<!-- tutorial-celery: ... -->`` and
``<!-- tutorial-tasks: ... -->`` the blocks of one. The only changes made to its commands: the interactive
``createsuperuser`` gets ``--noinput`` (its answers come from the environment), ``<username>`` is the
staff user it made, and the servers get a free port and test-friendly worker options. The model is the strict local
server with a scripted model, reached through ``OPENAI_BASE_URL`` as the tutorial says.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from django.conf import settings

from tests import services
from tests.packaging.conftest import ROOT, Dist
from tests.projects import ProjectDirectory
from tests.streaming.helpers import SSE, Stream, parse, read
from toolcalling.testing import OpenAICompatibleServer, ScriptedModel

MARK = re.compile(r"<!-- tutorial(?:-(celery|tasks))?: (\w[\w-]*)(?: (\S+))? -->\s*\n```\w*\n(.*?)\n```", re.DOTALL)
RUNNERS = ("celery", "tasks")  # how the tutorial runs approved calls: Celery's worker, or Django's Tasks


@dataclass
class Block:
    action: str  # run (shell lines), create or append (a file), serve (long-running shell lines)
    path: str | None
    text: str


def readme_blocks(runner: str) -> list[Block]:
    """The blocks a reader following the tutorial with this runner meets, in the page's order."""
    marked = MARK.findall((ROOT / "docs/tutorial.md").read_text())
    assert {r for r, *_ in marked} == {"", *RUNNERS}, marked
    blocks = [Block(a, p, t) for r, a, p, t in marked if r in ("", runner)]
    assert {b.action for b in blocks} == {"run", "create", "append", "serve"}, blocks
    return blocks


def commands(block: Block) -> list[str]:
    """The block's shell lines, without comments."""
    lines = [line.split(" #", 1)[0].strip() for line in block.text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@pytest.fixture(scope="module")
def venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel, as the tutorial installs it, and the pinned requirements.

    This process's pip installs into it (``--python``), which spares the virtualenv a pip of its own, and
    skips compiling bytecode up front: the same packages, a third of the time.
    """
    where = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    pip_install(where, "-r", str(ROOT / "requirements/base.txt"), str(dist.wheel))
    return where


def pip_install(venv: Path, *args: str) -> None:
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "--disable-pip-version-check"]
    result = subprocess.run([*pip, "install", "--quiet", "--no-compile", *args], capture_output=True)
    assert result.returncode == 0, result.stderr.decode()[-3000:]


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[ScriptedModel, str]]:
    scripted = ScriptedModel()
    with OpenAICompatibleServer(scripted) as server:
        yield scripted, server.base_url


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with services.redis_server(tmp_path_factory.mktemp("redis"), services.free_port()) as url:
        yield url + "/0"


class Project(ProjectDirectory):
    """The tutorial's project (the fresh virtualenv first on PATH)."""

    placeholders = {"<username>": "admin"}

    def write(self, block: Block) -> None:
        path = self.root / str(block.path)
        assert block.text.startswith(f"# {block.path}"), f"the block for {block.path} should say where it goes"
        if block.action == "create":
            path.write_text(block.text + "\n")
        else:
            assert path.exists(), f"{block.path} should exist before the tutorial adds to it"
            path.write_text(path.read_text() + "\n\n" + block.text + "\n")

    def start(self, line: str, log: Path, port: int) -> subprocess.Popen:
        argv = shlex.split(line)
        if argv[:2] == ["celery", "-A"]:
            argv += ["--concurrency=1", "--without-gossip", "--without-mingle"]
        elif argv[1:3] == ["manage.py", "db_worker"]:
            argv += ["--interval", "0.1", "--no-startup-delay", "--no-reload"]
        elif argv[1:3] == ["manage.py", "runserver"]:
            argv += [f"127.0.0.1:{port}", "--noreload"]
        return self.popen(argv, log)


def log_name(line: str) -> str:
    """Where a served command's output goes: ``celery.log``, ``runserver.log``, ``db_worker.log``."""
    argv = line.split()
    return f"{argv[2] if argv[1:2] == ['manage.py'] else argv[0]}.log"


@pytest.fixture(scope="module", params=RUNNERS)
def runner(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def site(runner, venv, model, dist, request, tmp_path_factory) -> Iterator[tuple[Project, str]]:
    """The tutorial's project, migrated, with its worker and web server running: Celery's worker with this test's
    Redis, or (``tasks``) db_worker with the ``[tasks]`` extra installed and no Redis anywhere."""
    _, base_url = model
    root = tmp_path_factory.mktemp(f"project-{runner}")
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    if runner == "celery":
        env.update(REDIS_URL=request.getfixturevalue("redis_url"))
    else:
        # The extra, as the tutorial's "Without Celery" installs it, added to the same virtualenv.
        pip_install(venv, "-r", str(ROOT / "requirements/tasks.txt"), f"{dist.wheel}[tasks]")
    env.update(
        PATH=f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY="test-key",
        DJANGO_SUPERUSER_USERNAME="admin",
        DJANGO_SUPERUSER_EMAIL="admin@example.com",
        DJANGO_SUPERUSER_PASSWORD="admin-password-1234",
    )
    project = Project(root, venv, env)
    servers: list[tuple[subprocess.Popen, Path]] = []
    port = services.free_port()
    try:
        for block in readme_blocks(runner):
            if block.action == "run":
                for line in commands(block):
                    project.run(line)
            elif block.action in ("create", "append"):
                project.write(block)
            else:
                for line in commands(block):
                    if line.startswith("redis-server"):
                        continue  # this test's own redis-server, at REDIS_URL
                    log = root / log_name(line)
                    servers.append((project.start(line, log, port), log))
        yield project, f"http://127.0.0.1:{port}"
    finally:
        for process, log in servers:
            services.stop_worker(process, log)


def wait_ready(site: tuple[Project, str], runner: str) -> None:
    project, base = site
    log, ready = ("celery.log", "ready.") if runner == "celery" else ("db_worker.log", "Starting worker")
    worker_log = project.root / log
    services.wait_until(lambda: ready in worker_log.read_text(), timeout=60, what=f"the tutorial's worker ({log})")

    def answers() -> bool:
        try:
            return httpx2.get(base + "/api/toolcalling/assistants/", timeout=2).status_code in (401, 403)
        except httpx2.TransportError:
            return False

    services.wait_until(answers, timeout=60, what="the tutorial's runserver")


def token(project: Project, username: str) -> str:
    out = project.run(f"python manage.py drf_create_token {username}")
    return re.search(r"Generated token (\w+) for user", out).group(1)


def follow_events(base: str, headers: dict, conversation: str, stream: Stream) -> threading.Thread:
    """Read the conversation's new events in a thread until the next ``turn_end``; returns once connected."""
    connected = threading.Event()

    def work() -> None:
        url = f"{base}/api/toolcalling/conversations/{conversation}/events/"
        with httpx2.Client(headers=headers, timeout=60) as client:
            with client.stream("GET", url, headers=SSE) as response:
                connected.set()  # the server fixed its starting point before it answered
                parse(response.iter_lines(), stream, stop=lambda e: e.type == "turn_end")
        connected.set()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    assert connected.wait(30), "the events stream did not open"
    return thread


# Its own project, database and services: one run of the suite is enough (the PostgreSQL and MariaDB passes skip
# it), and its set-up (a build, a virtualenv, migrations, two servers) takes longer than the suite's usual 120 s bound.
@pytest.mark.skipif(settings.DATABASE != "sqlite", reason="independent of the suite's database: run on SQLite")
@pytest.mark.timeout(480)
def test_the_readme_project_chats_approves_on_its_worker_and_streams(site, model, runner):
    project, base = site
    scripted, _ = model
    wait_ready(site, runner)
    if runner == "tasks":  # no Redis and no Celery in this project: the worker is db_worker
        written = (project.root / "yoursite/settings.py").read_text()
        assert "REDIS" not in written and "CELERY" not in written and 'TOOLCALLING["TASKS"] = "django"' in written
        assert not (project.root / "yoursite/celery.py").exists() and "REDIS_URL" not in project.env
    # Its one issue: the scripted model's local endpoint has no price for gpt-4o-mini (at OpenAI's URL it has one).
    checked = project.outputs["python manage.py check"]
    assert "System check identified 1 issue" in checked and "(toolcalling.W007) The model 'gpt-4o-mini'" in checked
    assert "Generated token" in project.outputs["python manage.py drf_create_token <username>"]

    # The customer who chats (the tutorial made only the staff user).
    create = "from django.contrib.auth import get_user_model; get_user_model().objects.create_user('alice')"
    project.run(f"python manage.py shell -c {shlex.quote(create)}")
    alice = {"Authorization": f"Token {token(project, 'alice')}"}
    staff = {"Authorization": f"Token {token(project, 'admin')}"}
    api = f"{base}/api/toolcalling/"
    with httpx2.Client(timeout=30) as http:
        assert http.get(api + "assistants/", headers=alice).json()[0]["id"] == "shop"
        conversation = http.post(api + "conversations/", json={"assistant": "shop"}, headers=alice).json()["id"]

        # A gated call: stored, waiting for a staff member; nothing runs yet.
        scripted.call("set_display_name", {"first_name": "Alice", "last_name": "Liddell"})
        url = api + f"conversations/{conversation}/messages/"
        answer = http.post(url, json={"content": "Call me Alice Liddell"}, headers=alice)
        assert answer.status_code == 201, answer.text
        (waiting,) = answer.json()["awaiting_approval"]
        assert (waiting["name"], waiting["label"]) == ("set_display_name", "Change my display name")

        # The staff member approves; the worker runs the call and continues the conversation.
        scripted.reply("Done: you are Alice Liddell now.")
        if runner == "celery":  # its events reach this reader through Redis
            events = Stream()
            reader = follow_events(base, alice, conversation, events)
            approved = http.post(api + f"tool-calls/{waiting['id']}/approve/", headers=staff)
            assert approved.status_code == 200, approved.text
            reader.join(timeout=60)
            assert not reader.is_alive(), "the worker's events never arrived"
            (decided,) = [e.data for e in events.of("tool_call_decided")]
            assert (decided["status"], decided["label"]) == ("approved", "Change my display name")
            finished = [e.data for e in events.of("tool_call_finished")]
            assert finished and finished[-1]["status"] == "succeeded"
            assert finished[-1]["label"] == "Change my display name"
            assert events.of("message")[-1].data["content"] == "Done: you are Alice Liddell now."
        else:  # no Redis: the worker's results reach the chat through the stored history, as the tutorial says
            approved = http.post(api + f"tool-calls/{waiting['id']}/approve/", headers=staff)
            assert approved.status_code == 200, approved.text
            history: list[dict] = []

            def answered() -> bool:
                history[:] = http.get(url, headers=alice).json()
                return history[-1]["role"] == "assistant" and not history[-1]["tool_calls"]

            services.wait_until(answered, timeout=60, what="the approved call's answer from db_worker")
            call = http.get(api + f"tool-calls/{waiting['id']}/", headers=staff).json()
            assert (call["status"], call["label"]) == ("succeeded", "Change my display name"), call
            assert history[-1]["content"] == "Done: you are Alice Liddell now."
            ran = (project.root / "db_worker.log").read_text()
            for job in ("run_approved_tool_call", "continue_conversation"):
                assert f"path=toolcalling.django_tasks.{job} state=SUCCESSFUL" in ran, ran

        # A streamed turn: the tool reads what the worker wrote.
        scripted.call("whoami", {})
        scripted.reply("You are Alice Liddell.")
        with http.stream("POST", url, json={"content": "Who am I?"}, headers={**alice, **SSE}) as response:
            assert response.status_code == 200
            streamed = read(response)
    assert "".join(e.data["content"] for e in streamed.of("delta")) == "You are Alice Liddell."
    assert streamed.types[-1] == "turn_end"
    assert '"name":"Alice Liddell"' in scripted.messages(-1)[-1]["content"]
    scripted.assert_done()
