"""What a turn holds in memory as a conversation's files pile up: the peak of Python's allocations (tracemalloc)
during each turn of a conversation whose every message carries one more file.

Run: ``.venv/bin/python bench/attachment_memory.py [--turns 6] [--mib 10]``.

Each turn is ``Assistant.run`` with one new PDF of ``--mib`` MiB (random bytes behind a PDF header), in the same
conversation, on the default ``ATTACHMENTS`` settings; the model is the strict local server in a process of its
own (three requests per turn: two tool calls, then the answer), reached with the real ``openai`` SDK, so the
request bodies the SDK builds are counted and the server's memory is not. After the file turns, one turn with no
file. Each line: the files the conversation holds, the peak above what was allocated before the turn, the file
reads from storage in that turn, and the files and stubs its last request carried.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import override_settings  # noqa: E402

from bench._model import ANSWER, model_server  # noqa: E402
from tests.attachments.storage import ALIAS, CountingStorage  # noqa: E402
from toolcalling import Assistant, hooks  # noqa: E402
from toolcalling.attachments import store  # noqa: E402
from toolcalling.models import Attachment, Conversation  # noqa: E402

MiB = 1024 * 1024


class LastRequest(hooks.Hook):
    """Keeps what the last request of the turn carried: its file parts, and its stubs (text parts naming a file)."""

    files = stubs = 0

    def before_model_call(self, turn: Any, request: Any) -> None:
        contents = [m["content"] for m in request.messages if m["role"] == "user" and isinstance(m["content"], list)]
        parts = [p for content in contents for p in content]
        LastRequest.files = sum(p["type"] in ("image_url", "file") for p in parts)
        LastRequest.stubs = sum(p["type"] == "text" and p["text"].startswith("[File ") for p in parts)


class FileReader(Assistant):
    id = "bench_files"
    instructions = "You add numbers and read files."
    tools = ["add"]
    hooks = [LastRequest()]


def pdf(size: int) -> bytes:
    head = b"%PDF-1.4\n"
    return head + os.urandom(size - len(head))


def turn(user: Any, conversation: Conversation | None, data: bytes | None) -> tuple[Conversation, float, int]:
    """One turn, with a file if ``data``: its conversation, its peak MiB above the start, the file reads."""
    files = [store(SimpleUploadedFile("invoice.pdf", data), user)] if data is not None else []
    gc.collect()
    CountingStorage.opened.clear()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]  # 0 while not tracing (the warm-up)
    result = FileReader().run(user, "Add 2+3 and 4+5, and read my files.", conversation, attachments=files)
    peak = tracemalloc.get_traced_memory()[1] - base
    assert result.reply == ANSWER, result.reply
    return result.conversation, peak / MiB, sum(CountingStorage.opened.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=6, help="turns that each add one file")
    parser.add_argument("--mib", type=int, default=10, help="MiB per file")
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    storages = {**settings.STORAGES, ALIAS: {"BACKEND": "tests.attachments.storage.CountingStorage"}}
    with model_server() as base_url, override_settings(STORAGES=storages):
        toolcalling = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "x", "MAX_RETRIES": 0, "TIMEOUT": 600,
                       "ATTACHMENTS": {"STORAGE": ALIAS}}  # fmt: skip
        with override_settings(TOOLCALLING=toolcalling):
            turn(user, None, pdf(1024))  # a warm-up: the modules a turn imports first, before the counting
            tracemalloc.start()
            print(f"{options.turns} turns of one {options.mib} MiB PDF each, then one turn without a file:")
            print(f"{'files held':>10} {'peak MiB':>9} {'reads':>6} {'sent':>5} {'stubs':>6} {'seconds':>8}")
            conversation = None
            for n in range(options.turns + 1):
                data = pdf(options.mib * MiB) if n < options.turns else None
                started = time.perf_counter()
                conversation, peak, reads = turn(user, conversation, data)
                elapsed = time.perf_counter() - started
                held = Attachment.objects.filter(conversation=conversation).count()
                print(f"{held:>10} {peak:>9.1f} {reads:>6} {LastRequest.files:>5} {LastRequest.stubs:>6} "
                      f"{elapsed:>8.2f}")  # fmt: skip
            tracemalloc.stop()
            for attachment in Attachment.objects.filter(conversation=conversation):
                attachment.delete()  # its file goes with it


if __name__ == "__main__":
    main()
