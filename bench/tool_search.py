"""Prompt tokens with and without tool search, for one scripted five-turn task over 100 tools, in one run.

Run: ``.venv/bin/python bench/tool_search.py``. Both modes run the real loop (``Assistant.run``) against the
strict local OpenAI-compatible server over HTTP. Measured per mode: the prompt tokens the server reports
(``usage.prompt_tokens``, its estimate of JSON characters / 4 of messages and tools, as stored on the
conversation) and the bytes of every request body sent. The task is the same; with tool search the model
spends one extra call per new kind of tool on ``search_tools``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from tests.loop_features import assistants  # noqa: E402,F401  (registers lf_search and lf_no_search)
from toolcalling import Assistant  # noqa: E402
from toolcalling.testing import ScriptedModel  # noqa: E402
from toolcalling.testutils import override_model  # noqa: E402

# (user message, search query the model would write, the tool it then calls, its arguments)
TASK = [
    ("Cancel my order A-1001, it was a mistake.", "cancel an order", "cancel_order", {"order_id": "A-1001"}),
    ("Refund the money for it.", "refund money for an order", "create_refund", {"query": "A-1001"}),
    ("Where is shipment S-77?", "track a shipment parcel", "get_shipment", {"shipment_id": "S-77"}),
    ("Send the customer an e-mail about the refund.", "e-mail about a refund", "notify_refund", {"refund_id": "R-1"}),
    ("How many reviews are waiting?", "count reviews", "count_reviews", {"query": "waiting"}),
]


def script(model: ScriptedModel, search: bool) -> None:
    found: set[str] = set()
    for _, query, tool, args in TASK:
        if search and tool not in found:
            model.call("search_tools", {"query": query})
            found.add(tool)
        model.call(tool, args)
        model.reply(f"Done: {tool}.")


def run(assistant_id: str, search: bool) -> dict[str, int]:
    user = get_user_model().objects.get(username="bench")
    with override_model() as model:
        script(model, search)
        conversation = None
        for message, _, _, _ in TASK:
            result = Assistant.get(assistant_id).run(user, message, conversation)
            conversation = result.conversation
        assert not model.rejected and not model.pending, (model.rejected, model.pending)
        assert conversation is not None
        conversation.refresh_from_db()
        return {
            "model_calls": len(model.requests),
            "prompt_tokens": conversation.prompt_tokens,
            "request_bytes": sum(len(json.dumps(body)) for body in model.requests),
            "tools_offered_max": max(len(body.get("tools", [])) for body in model.requests),
        }


def main() -> None:
    call_command("migrate", verbosity=0)
    get_user_model().objects.get_or_create(username="bench")
    baseline = run("lf_no_search", search=False)
    searched = run("lf_search", search=True)
    print(f"Task: {len(TASK)} user turns over 100 registered tools, real loop against the strict local server.")
    print(f"{'':24}{'all tools':>12}{'tool search':>14}")
    for key in ("model_calls", "tools_offered_max", "prompt_tokens", "request_bytes"):
        print(f"{key:24}{baseline[key]:>12}{searched[key]:>14}")
    for key in ("prompt_tokens", "request_bytes"):
        saved = 1 - searched[key] / baseline[key]
        print(f"{key} saved with tool search: {saved:.1%} (ratio {searched[key] / baseline[key]:.3f})")


if __name__ == "__main__":
    main()
