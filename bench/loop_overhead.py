"""A stored tool-calling turn against a hand-written loop over the bare ``openai`` SDK, and against peers.

Run: ``.venv/bin/python bench/loop_overhead.py [--turns 20] [--rounds 7] [--postgres] [--peers]
[--api responses|anthropic] [--cold]``.

Every side talks to the same strict local server (in a process of its own) with the real ``openai`` SDK,
offers the same one tool, and makes the same three requests per turn: the model asks for a call of ``add``,
then for a second one, then answers. A conversation runs ``--turns`` turns, so later turns send a longer
history. The baseline builds the history by hand and keeps nothing; the app runs ``Assistant.run``, which
validates arguments, runs hooks and stores every message and call (SQLite; ``--postgres`` too).
The hand-written persisting loop is the bare loop plus the rows the app stores (each message, each call and
its result), written with plain ORM ``create()`` / ``update()`` in transactions (``_persisting_loop.py``): the
fair baseline for a loop that persists, on each database the app runs on. On Chat Completions each of the two
loops runs twice: through ``chat.completions.create``, and through the SDK's plain ``client.post`` as the app asks
(no walk of the history through the SDK's transform), which is the least any loop that stores the same rows and
asks as the app does can take.
``--peers`` adds pydantic-ai and openai-agents (``pip install -r requirements/bench.txt``), twice each: keeping
their message history in memory between turns (they store nothing), and persisting it on each database the way
their docs say, stored after every turn and read back from the database before the next (``_persisting_peers.py``:
openai-agents' ``SQLiteSession`` / ``SQLAlchemySession``, pydantic-ai's ``all_messages_json()`` in a row), and
LangGraph with its SQLite / PostgreSQL checkpointer.
Each timed conversation follows a one-turn conversation of the same side that is not timed (``--cold``: none). The
app and the persisting loops run in runner processes of their own (``_app_runner.py``), which wait on their pipe
while the other sides run; the bare loops and the peers run in this process, busy all along. Without that start a
runner's first turn pays most for waking a process whose caches the other sides' work has emptied
(``runner_start.py``: the app's first turn 18.6 ms cold against 11.2 warm on SQLite, the persisting loop's 14.7
against 9.9; docs/benchmarks.md). With it every side's first turn starts as warm as the others'.
Printed: the median time of the first and the last turn over the rounds, each side's ratio to the bare SDK
measured in the same run, the app's ratio to the persisting loop on the same database, and with ``--peers`` the
app's ratio to each persisting peer on the same database. Lower is better; 1.00 is level.
With ``--api responses`` the app and the baseline speak the Responses API, statelessly, with a reasoning model:
the baseline is a hand-written ``client.responses.create`` loop that sends its output items (reasoning included)
back as input, beside the same loop through ``client.post`` (the persisting loop and the peers speak Chat
Completions only, so they are left out). With ``--api anthropic`` they speak Anthropic's Messages API through
the ``anthropic`` SDK: ``client.messages.create`` sending its content blocks back, and the same loop through
``client.post``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR = Path(os.environ.setdefault("TOOLCALLING_TEST_VAR", tempfile.mkdtemp(prefix="toolcalling-bench-")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

import httpx2  # noqa: E402
import openai  # noqa: E402

from bench._model import ADD_ANTHROPIC, ADD_RESPONSES, ANSWER, QUESTION, model_server  # noqa: E402
from bench._persisting_loop import Answer, created, posted  # noqa: E402
from bench._persisting_peers import persisting_peer_sides  # noqa: E402
from bench._postgres import postgres  # noqa: E402
from bench._sides import app_side, close_sides, peer_sides  # noqa: E402

Side = Callable[[str, int], list[float]]  # (base URL, turns) -> seconds per turn
PEERS = ("openai-agents", "pydantic-ai", "LangGraph")


def bare_loop(base_url: str, turns: int, ask: Callable[[openai.OpenAI, list[dict]], Answer]) -> list[float]:
    """The hand-written loop: the SDK alone, the history built by hand, nothing stored; each answer asked for by
    ``ask``."""
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    history: list[dict] = [{"role": "system", "content": "You add numbers."}]
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        history.append({"role": "user", "content": QUESTION})
        while True:
            answer = ask(client, history)
            history.append(answer.message)
            if not answer.calls:
                break
            for call_id, _name, arguments in answer.calls:
                args = json.loads(arguments)
                history.append({"role": "tool", "tool_call_id": call_id, "content": str(args["a"] + args["b"])})
        assert answer.content == ANSWER
        times.append(time.perf_counter() - started)
    return times


def bare_sdk(base_url: str, turns: int) -> list[float]:
    """The baseline: each answer through ``chat.completions.create`` (``_persisting_loop.created``)."""
    return bare_loop(base_url, turns, created)


def bare_sdk_post(base_url: str, turns: int) -> list[float]:
    """Each answer through the SDK's plain ``client.post("/chat/completions")`` and the JSON it answers, as the app
    asks (``_persisting_loop.posted``): ``chat.completions.create`` walks the whole history through the SDK's
    parameter transform on every request; this loop shows what a loop that stores nothing costs without that walk."""
    return bare_loop(base_url, turns, posted)


def bare_responses(base_url: str, turns: int) -> list[float]:
    """The hand-written stateless Responses loop: output items (reasoning too) go back as input, nothing stored."""
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    history: list[dict] = []
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        history.append({"role": "user", "content": QUESTION})
        while True:
            response = client.responses.create(
                model="gpt-5-mini",
                instructions="You add numbers.",
                input=history,  # type: ignore[arg-type]
                tools=[ADD_RESPONSES],  # type: ignore[list-item]
                store=False,
                include=["reasoning.encrypted_content"],
            )
            history.extend(item.model_dump(exclude_none=True) for item in response.output)
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                break
            for call in calls:
                args = json.loads(call.arguments)
                result = str(args["a"] + args["b"])
                history.append({"type": "function_call_output", "call_id": call.call_id, "output": result})
        assert response.output_text == ANSWER
        times.append(time.perf_counter() - started)
    return times


def bare_responses_post(base_url: str, turns: int) -> list[float]:
    """The same stateless loop through the SDK's plain ``client.post("/responses")`` and the JSON it answers, as
    the app sends it: ``responses.create`` walks its whole input through the SDK's parameter transform on every
    request, which grows with the history; this loop shows what is left without that."""
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    history: list[dict] = []
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        history.append({"role": "user", "content": QUESTION})
        while True:
            body = {"model": "gpt-5-mini", "instructions": "You add numbers.", "input": history,
                    "tools": [ADD_RESPONSES], "store": False, "include": ["reasoning.encrypted_content"]}  # fmt: skip
            raw = client.post("/responses", body=body, cast_to=httpx2.Response)
            output = json.loads(raw.content)["output"]
            history.extend(output)
            calls = [item for item in output if item["type"] == "function_call"]
            if not calls:
                break
            for call in calls:
                args = json.loads(call["arguments"])
                result = str(args["a"] + args["b"])
                history.append({"type": "function_call_output", "call_id": call["call_id"], "output": result})
        assert output[-1]["content"][0]["text"] == ANSWER
        times.append(time.perf_counter() - started)
    return times


def bare_anthropic(base_url: str, turns: int) -> list[float]:
    """The hand-written Messages loop: content blocks go back as the assistant message, results as the next user
    message, nothing stored."""
    import anthropic

    client = anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key="x", max_retries=0)
    history: list[dict] = []
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        history.append({"role": "user", "content": QUESTION})
        while True:
            message = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, system="You add numbers.",
                                             messages=history, tools=[ADD_ANTHROPIC])  # type: ignore[arg-type]  # fmt: skip
            history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
            calls = [block for block in message.content if block.type == "tool_use"]
            if not calls:
                break
            results = [{"type": "tool_result", "tool_use_id": c.id, "content": str(c.input["a"] + c.input["b"])}  # type: ignore[union-attr]
                       for c in calls]  # fmt: skip
            history.append({"role": "user", "content": results})
        assert message.content[0].text == ANSWER  # type: ignore[union-attr]
        times.append(time.perf_counter() - started)
    return times


def bare_anthropic_post(base_url: str, turns: int) -> list[float]:
    """The same Messages loop through the SDK's plain ``client.post("/v1/messages")`` and the JSON it answers, as
    the app sends it."""
    import anthropic

    client = anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key="x", max_retries=0)
    history: list[dict] = []
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        history.append({"role": "user", "content": QUESTION})
        while True:
            body = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "You add numbers.",
                    "messages": history, "tools": [ADD_ANTHROPIC]}  # fmt: skip
            content = json.loads(client.post("/v1/messages", body=body, cast_to=httpx2.Response).content)["content"]
            history.append({"role": "assistant", "content": content})
            calls = [block for block in content if block["type"] == "tool_use"]
            if not calls:
                break
            results = [{"type": "tool_result", "tool_use_id": c["id"],
                        "content": str(c["input"]["a"] + c["input"]["b"])} for c in calls]  # fmt: skip
            history.append({"role": "user", "content": results})
        assert content[0]["text"] == ANSWER
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help="also the app on a private PostgreSQL cluster")
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also pydantic-ai and openai-agents in memory, and persisting on each database with LangGraph",
    )
    parser.add_argument("--api", choices=["chat_completions", "responses", "anthropic"], default="chat_completions")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="no one-turn conversation before each timed one: the sides in a runner process start it cold",
    )
    options = parser.parse_args()

    databases = {"SQLite": "sqlite", **({"PostgreSQL": "postgresql"} if options.postgres else {})}
    chat = options.api == "chat_completions"
    bare = {"chat_completions": bare_sdk, "responses": bare_responses, "anthropic": bare_anthropic}
    sides: dict[str, Side] = {"bare SDK loop": bare[options.api]}
    posting = {"chat_completions": bare_sdk_post, "responses": bare_responses_post, "anthropic": bare_anthropic_post}
    sides["bare loop, client.post"] = posting[options.api]
    for label, database in databases.items():
        sides[f"toolcalling, {label}"] = app_side(database, api=options.api)
        if chat or options.api == "anthropic":
            sides[f"persisting loop, {label}"] = app_side(database, command="persist", api=options.api)
        if chat:
            sides[f"persisting, client.post, {label}"] = app_side(database, command="persist-post", api=options.api)
    if options.peers and chat:
        sides.update(peer_sides())
        sides.update(persisting_peer_sides(databases, VAR))
    first: dict[str, list[float]] = {name: [] for name in sides}
    last: dict[str, list[float]] = {name: [] for name in sides}
    with ExitStack() as stack:
        if options.postgres:
            stack.enter_context(postgres(VAR))  # the runner processes inherit its settings
        base_url = stack.enter_context(model_server())
        for side in sides.values():
            side(base_url, 2)  # warm up imports, connections and database pages
        for _ in range(options.rounds):
            for name, side in sides.items():  # interleaved, so drift in the machine hits every side alike
                if not options.cold:
                    side(base_url, 1)  # not timed: a start as warm for the sides in a runner as for the others
                times = side(base_url, options.turns)
                first[name].append(times[0])
                last[name].append(times[-1])
        stack.callback(close_sides, sides)
    base_first = statistics.median(first["bare SDK loop"])
    base_last = statistics.median(last["bare SDK loop"])
    print(
        f"{options.turns}-turn conversations on {options.api}, 3 requests per turn, median of {options.rounds} rounds."
    )
    print(f"{'side':<36} {'turn 1':>9} {'ratio':>6} {'turn ' + str(options.turns):>9} {'ratio':>6}")
    for name in sides:
        f, l_ = statistics.median(first[name]), statistics.median(last[name])
        print(f"{name:<36} {f * 1000:7.1f}ms {f / base_first:6.2f} {l_ * 1000:7.1f}ms {l_ / base_last:6.2f}")
    if options.api == "responses":
        return
    print("The app against the persisting loop on the same database:")
    for label in databases:
        app = f"toolcalling, {label}"
        for persisting in (f"persisting loop, {label}", f"persisting, client.post, {label}"):
            if persisting in sides:
                f = statistics.median(first[app]) / statistics.median(first[persisting])
                l_ = statistics.median(last[app]) / statistics.median(last[persisting])
                print(f"{'over ' + persisting:<36} {'':>9} {f:6.2f} {'':>9} {l_:6.2f}")
    if options.peers:
        print("The app against each persisting peer on the same database (below 1.00 the app is faster):")
        for label in databases:
            app = f"toolcalling, {label}"
            for peer in (name for name in sides if name.endswith(f", {label}") and name.split(",")[0] in PEERS):
                f = statistics.median(first[app]) / statistics.median(first[peer])
                l_ = statistics.median(last[app]) / statistics.median(last[peer])
                print(f"{peer:<36} {'':>9} {f:6.2f} {'':>9} {l_:6.2f}")


if __name__ == "__main__":
    main()
