"""What the app adds to a tool-calling turn, as a ratio to the bare SDK doing the same HTTP exchange, in one run.

Run: ``.venv/bin/python bench/loop_overhead.py [turns]``. Both sides talk to the same strict local server over
HTTP with the real ``openai`` SDK and make the same three requests per turn (the model asks for two tool calls,
gets their results, answers). The baseline builds the messages by hand and keeps nothing; the app runs
``Assistant.run`` — schema validation, the tools, hooks, and every message and call stored in SQLite. The
ratio (app time / baseline time) is what to watch; absolute times depend on the machine.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

import openai  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from toolcalling import Assistant  # noqa: E402
from toolcalling.testing import OpenAICompatibleServer, ScriptedModel  # noqa: E402
from toolcalling.testutils import override_model  # noqa: E402
from toolcalling.toolkit import tools  # noqa: E402


def script(model: ScriptedModel, turns: int) -> None:
    for _ in range(turns):
        model.calls(("add", {"a": 2, "b": 3}), ("add", {"a": 4, "b": 5}))
        model.reply("5 and 9.")


def bare_sdk(turns: int) -> float:
    """The same exchange with the SDK alone: hand-built history, nothing stored."""
    model = ScriptedModel()
    script(model, turns)
    definitions = [tools.get("add").definition()]
    with OpenAICompatibleServer(model) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        history: list[dict] = [{"role": "system", "content": "You are a test helper."}]
        started = time.perf_counter()
        for _ in range(turns):
            history.append({"role": "user", "content": "Add 2+3 and 4+5."})
            while True:
                response = client.chat.completions.create(model="m", messages=history, tools=definitions)
                message = response.choices[0].message
                history.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                for call in message.tool_calls:
                    args = json.loads(call.function.arguments)
                    history.append({"role": "tool", "tool_call_id": call.id, "content": str(args["a"] + args["b"])})
        elapsed = time.perf_counter() - started
    assert not model.rejected and not model.pending
    return elapsed


def with_app(turns: int) -> float:
    user = get_user_model().objects.get(username="bench")
    assistant = Assistant.get("helper")
    with override_model() as model:
        script(model, turns)
        conversation = None
        started = time.perf_counter()
        for _ in range(turns):
            conversation = assistant.run(user, "Add 2+3 and 4+5.", conversation).conversation
        elapsed = time.perf_counter() - started
    assert not model.rejected and not model.pending
    return elapsed


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    call_command("migrate", verbosity=0)
    get_user_model().objects.get_or_create(username="bench")
    bare_sdk(3), with_app(3)  # warm up imports, connections and SQLite pages
    ratios, bare_times, app_times = [], [], []
    for _ in range(5):
        bare, app = bare_sdk(turns), with_app(turns)
        bare_times.append(bare)
        app_times.append(app)
        ratios.append(app / bare)
    print(f"{turns} turns x 3 model calls, 5 rounds, same strict local server over HTTP.")
    print(f"bare SDK:  median {statistics.median(bare_times) / turns * 1000:.1f} ms per turn")
    print(f"with app:  median {statistics.median(app_times) / turns * 1000:.1f} ms per turn")
    spread = f"min {min(ratios):.2f}, max {max(ratios):.2f}"
    print(f"ratio app / bare SDK: median {statistics.median(ratios):.2f} ({spread})")


if __name__ == "__main__":
    main()
