"""``make demo`` as a user runs it: it listens on 127.0.0.1 unless HOST says otherwise, prints API tokens, and
the curl examples of the REST API and streaming guides (read from docs/guides/, marked ``<!-- demo-curl -->``) work
against it as written.

It runs in a copy of the checkout, so the demo's database is its own, with this checkout's virtualenv
(``-o`` keeps make from reinstalling it). Only the port differs from the guides: a free one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from tests import services
from tests.packaging.conftest import ROOT, copy_source

# make demo runs its own database: one run of the suite is enough (the PostgreSQL and MariaDB passes skip these).
pytestmark = pytest.mark.skipif(settings.DATABASE != "sqlite", reason="independent of the suite's database")

CURL = re.compile(r"<!-- demo-curl -->\s*\n```sh\n(.*?)\n```", re.DOTALL)
VENV = ROOT / ".venv"


def listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp writes them) that listen on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


@contextmanager
def make_demo(workdir: Path, **env: str) -> Iterator[tuple[int, Path]]:
    if not (VENV / ".installed").exists():
        pytest.skip("run `make setup` first: the test uses this checkout's virtualenv")
    port = services.free_port()
    source = copy_source(workdir / "checkout")
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TOOLCALLING_", "DJANGO_", "CELERY_")) and k not in ("REDIS_URL", "HOST")
    }
    environment.update(PORT=str(port), **env)
    log = workdir / "demo.log"
    command = ["make", "--no-print-directory", "-o", f"{VENV}/.installed", "demo", f"VENV={VENV}"]
    process = subprocess.Popen(
        command, cwd=source, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        services.wait_until(
            lambda: process.poll() is None and listening(port) or process.poll() is not None,
            timeout=120,
            what="make demo to listen",
        )
        assert process.poll() is None, log.read_text()
        yield port, log
    finally:
        # Ctrl-C, as a user stops it, to the whole group: make, its shell, runserver and its reloader child.
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def test_make_demo_listens_on_this_machine_only_and_the_guides_curl_examples_work(tmp_path):
    with make_demo(tmp_path) as (port, log):
        assert listening(port) == {"0100007F"}  # 127.0.0.1, nothing else
        printed = log.read_text()
        tokens = dict(re.findall(r"export (TOKEN|STAFF_TOKEN)=(\w+)", printed))
        assert set(tokens) == {"TOKEN", "STAFF_TOKEN"}, printed
        assert "Warning" not in printed

        pages = ("docs/guides/rest-api.md", "docs/guides/streaming.md")
        blocks = [block for page in pages for block in CURL.findall((ROOT / page).read_text())]
        assert len(blocks) == 3, "the guides' curl examples: basics, an approval, a stream"
        script = "set -euo pipefail\n" + "".join(f"echo '@@@ block'\n{block}\n" for block in blocks)
        script = script.replace("localhost:8000", f"localhost:{port}")
        result = subprocess.run(
            ["bash", "-c", script],
            env={"PATH": "/usr/bin:/bin", **tokens},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        basics, approval, stream = result.stdout.split("@@@ block\n")[1:]

    assert '"id":"shop"' in basics and '"status":"idle"' in basics and "shipped" in basics
    assert '"results":[' in basics and '"next":null' in basics  # the history page
    assert '"status":"awaiting_approval"' in approval
    assert '"name":"cancel_order","label":"Cancel an order"' in approval
    assert re.search(r'"status":"(approved|succeeded)"', approval.splitlines()[-1])
    assert "event: delta" in stream and "event: turn_end" in stream


def test_make_demo_listens_where_host_says_and_warns(tmp_path):
    with make_demo(tmp_path, HOST="0.0.0.0") as (port, log):
        assert listening(port) == {"00000000"}
        assert "Warning: the demo listens on 0.0.0.0 with well-known passwords" in log.read_text()
