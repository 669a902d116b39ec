"""How far one chat turn travels through the app: a traced ``POST conversations/{id}/messages/`` with one tool call.

It counts, for the app's own code only (files under ``toolcalling/``, the test doubles of ``toolcalling.testing``
left out, since they stand in for the model): the files a turn enters, the calls it makes, how often
consecutive calls change file, and how many of the app's frames stand between the view and the tool. Not a
timing: the figures are the same on every machine for the same code.

    .venv/bin/python bench/trace_turn.py            # a summary
    .venv/bin/python bench/trace_turn.py --files    # and the files with their call counts
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-trace-"))

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from toolcalling.testutils import override_model  # noqa: E402

APP = str(ROOT / "toolcalling") + os.sep
DOUBLES = str(ROOT / "toolcalling" / "testing") + os.sep
TOOL = "add"  # the test site's tool that the turn calls


class Trace:
    """Every call into the app's code made by this thread while it is on."""

    def __init__(self) -> None:
        self.files: Counter[str] = Counter()
        self.functions: set[CodeType] = set()
        self.calls = 0
        self.switches = 0
        self.last_file: str | None = None
        self.tool_depth: int | None = None
        self.thread = threading.get_ident()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or threading.get_ident() != self.thread:
            return
        path = frame.f_code.co_filename
        if not path.startswith(APP) or path.startswith(DOUBLES):
            return
        self.calls += 1
        self.files[path] += 1
        self.functions.add(frame.f_code)
        if self.last_file is not None and path != self.last_file:
            self.switches += 1
        self.last_file = path
        if frame.f_code.co_name == TOOL and path.endswith(os.path.join("tests", "testapp", "tools.py")):
            return
        if self.tool_depth is None and _calls_tool(frame):
            self.tool_depth = _app_depth(frame)


def _lines(functions: set[CodeType]) -> int:
    """The source lines the functions span, from each ``def`` to its last line, a nested one's counted once."""
    spans: dict[str, set[int]] = {}
    for code in functions:
        last = max((line for _, _, line in code.co_lines() if line is not None), default=code.co_firstlineno)
        spans.setdefault(code.co_filename, set()).update(range(code.co_firstlineno, last + 1))
    return sum(map(len, spans.values()))


def _calls_tool(frame: FrameType) -> bool:
    """Whether this frame is the app's call into the tool function (the tool's own frame comes next)."""
    return frame.f_code.co_name == "invoke" and frame.f_code.co_filename.endswith("_tool.py")


def _app_depth(frame: FrameType | None) -> int:
    depth = 0
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(APP) and not path.startswith(DOUBLES):
            depth += 1
        frame = frame.f_back
    return depth


def main() -> None:
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="trace")
    client = APIClient()
    client.force_authenticate(user)
    with override_model() as model:
        conversation = client.post("/api/toolcalling/conversations/", {"assistant": "helper"}, format="json").json()
        url = f"/api/toolcalling/conversations/{conversation['id']}/messages/"
        # One untraced turn first, so imports and caches made once per process are not counted.
        model.call(TOOL, {"a": 1, "b": 2})
        model.reply("3")
        assert client.post(url, {"content": "warm up"}, format="json").status_code == 201
        model.call(TOOL, {"a": 2, "b": 3})
        model.reply("5")
        trace = Trace()
        sys.setprofile(trace)
        try:
            response = client.post(url, {"content": "What is 2 + 3?"}, format="json")
        finally:
            sys.setprofile(None)
    assert response.status_code == 201, response.content
    print(f"files entered: {len(trace.files)}")
    print(f"calls into the app: {trace.calls}")
    print(f"file switches: {trace.switches}")
    print(f"the app's frames around the tool: {trace.tool_depth}")
    print(f"functions run: {len(trace.functions)}, spanning {_lines(trace.functions)} lines")
    if "--files" in sys.argv:
        for path, count in trace.files.most_common():
            print(f"{count:6d}  {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
