"""What a turn costs as its conversation grows: rows read, queries and the app's own time, from 10 to 2,000
stored messages, with and without a memory budget.

Run: ``.venv/bin/python bench/history_scaling.py [--turns 15]``.

The app's own time is a turn's time minus the time its model calls took (the ``model_call_finished``
signal reports each), so it is what the app adds: reading and building the history, storing, tools, hooks.
Under a budget (``history_max_messages = 40``) rows read and time should stay flat; without one, the
history is sent whole, and the app's own time may grow by at most 20 ms per 1,000 messages.
"""

from __future__ import annotations

import argparse
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

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import override_settings  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench._model import ANSWER, QUESTION, model_server  # noqa: E402
from toolcalling import Assistant, signals  # noqa: E402
from toolcalling.engine import _memory as memory  # noqa: E402
from toolcalling.models import Conversation, Message, ToolCall  # noqa: E402

SIZES = [10, 500, 1000, 2000]


class Unbudgeted(Assistant):
    id = "bench_unbudgeted"
    instructions = "You add numbers."
    tools = ["add"]


class Budgeted(Unbudgeted):
    id = "bench_budgeted"
    history_max_messages = 40


def stored(user: object, assistant_id: str, messages: int) -> Conversation:
    """A conversation with ``messages`` stored messages, in turns of a question, two calls and an answer."""
    conversation = Conversation.objects.create(user=user, assistant_id=assistant_id)
    rows = []
    for n in range(messages // 6 + 1):
        rows += [
            Message(conversation=conversation, role="user", content=QUESTION),
            Message(conversation=conversation, role="assistant", content=""),
            Message(conversation=conversation, role="tool", content="5", tool_call_id=f"c{n}a"),
            Message(conversation=conversation, role="assistant", content=""),
            Message(conversation=conversation, role="tool", content="9", tool_call_id=f"c{n}b"),
            Message(conversation=conversation, role="assistant", content=ANSWER),
        ]
    created = Message.objects.bulk_create(rows[:messages])
    calls = [
        ToolCall(conversation=conversation, message=m, call_id=created[i + 1].tool_call_id, name="add",
                 raw_arguments='{"a": 2, "b": 3}', status="succeeded")
        for i, m in enumerate(created[:-1])
        if m.role == "assistant" and not m.content and created[i + 1].role == "tool"
    ]  # fmt: skip
    ToolCall.objects.bulk_create(calls)
    return conversation


def measure(assistant: Assistant, conversation: Conversation, user: object) -> tuple[float, int, int]:
    """One turn: the app's own seconds, the queries it made and the stored rows it read for its history."""
    model_time: list[float] = []
    rows: list[int] = []
    real = memory.history_items

    def counting(*args: object, **kwargs: object) -> list:
        found = real(*args, **kwargs)
        rows.append(len(found))
        return found

    def on_model_call(sender: object, duration_ms: float, **kwargs: object) -> None:
        model_time.append(duration_ms / 1000)

    signals.model_call_finished.connect(on_model_call)
    memory.history_items = counting
    try:
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            result = assistant.run(user, QUESTION, conversation)
            elapsed = time.perf_counter() - started
    finally:
        memory.history_items = real
        signals.model_call_finished.disconnect(on_model_call)
    assert result.reply == ANSWER
    return elapsed - sum(model_time), len(queries), sum(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=15, help="turns measured per size (the median is shown)")
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    with model_server() as base_url:
        toolcalling = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "x", "MAX_RETRIES": 0}
        with override_settings(TOOLCALLING=toolcalling):
            print(f"median of {options.turns} turns; own time = turn time - model call time")
            print(f"{'assistant':<12} {'stored':>7} {'own ms':>8} {'queries':>8} {'rows read':>10}")
            own_ms: dict[str, dict[int, float]] = {}
            for assistant in (Budgeted(), Unbudgeted()):
                label = "budget 40" if assistant.history_max_messages else "no budget"
                for size in SIZES:
                    results = []
                    for _ in range(options.turns):
                        conversation = stored(user, assistant.id, size)
                        results.append(measure(assistant, conversation, user))
                    own = statistics.median(r[0] for r in results) * 1000
                    own_ms.setdefault(label, {})[size] = own
                    queries, rows = results[-1][1], results[-1][2]
                    print(f"{label:<12} {size:>7} {own:>8.1f} {queries:>8} {rows:>10}")
            for label, by_size in own_ms.items():
                slope = (by_size[SIZES[-1]] - by_size[SIZES[0]]) / (SIZES[-1] - SIZES[0]) * 1000
                flat = by_size[SIZES[-1]] / by_size[SIZES[0]]
                print(f"{label}: own time at {SIZES[-1]} / at {SIZES[0]} = {flat:.2f}; +{slope:.1f} ms per 1,000")


if __name__ == "__main__":
    main()
