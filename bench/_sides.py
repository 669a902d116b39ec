"""The sides of the loop benchmark besides the bare SDK: the app (in a runner process per database) and the peers
that keep their history in memory (the peers that persist it are in ``_persisting_peers.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench._model import ANSWER, QUESTION

ROOT = Path(__file__).resolve().parent.parent
Side = Callable[[str, int], list[float]]


def app_side(
    database: str, env: dict[str, str] | None = None, *, command: str = "run", api: str = "chat_completions"
) -> Side:
    """The app on ``database`` ("sqlite" or "postgresql") and ``api``, driven through ``bench/_app_runner.py``
    (``command="persist"``: the hand-written persisting loop there instead of the app)."""
    runners: dict[str, subprocess.Popen] = {}

    def side(base_url: str, turns: int) -> list[float]:
        """Seconds per turn of a new conversation of ``turns`` turns."""
        if base_url not in runners:
            environment = {**os.environ, "TOOLCALLING_TEST_DATABASE": database, **(env or {})}
            argv = [sys.executable, str(ROOT / "bench" / "_app_runner.py"), "--base-url", base_url, "--api", api]
            runner = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment)
            assert runner.stdout is not None and runner.stdout.readline().strip() == "ready"
            runners[base_url] = runner
        runner = runners[base_url]
        assert runner.stdin is not None and runner.stdout is not None
        runner.stdin.write(f"{command} {turns}\n")
        runner.stdin.flush()
        return json.loads(runner.stdout.readline())

    side.runners = runners  # type: ignore[attr-defined]
    return side


def close_sides(sides: dict[str, Side]) -> None:
    """End the runner processes and the peers' connections (before the database they use goes away)."""
    for side in sides.values():
        if callable(close := getattr(side, "close", None)):
            close()
        for runner in getattr(side, "runners", {}).values():
            runner.stdin.close()
            runner.wait(30)


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def peer_sides() -> dict[str, Side]:
    """pydantic-ai and openai-agents running the same exchange, keeping their own history in memory between turns
    (they store nothing)."""
    return {"pydantic-ai, in memory": pydantic_ai_side, "openai-agents, in memory": openai_agents_side}


def pydantic_ai_side(base_url: str, turns: int) -> list[float]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=base_url, api_key="x"))
    agent = Agent(model, instructions="You add numbers.", tools=[add])
    history = None
    times = []
    for _ in range(turns):
        started = time.perf_counter()
        result = agent.run_sync(QUESTION, message_history=history)
        times.append(time.perf_counter() - started)
        assert result.output == ANSWER, result.output
        history = result.all_messages()
    return times


def openai_agents_side(base_url: str, turns: int) -> list[float]:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    agent = Agent(
        name="bench",
        instructions="You add numbers.",
        tools=[function_tool(add)],
        model=OpenAIChatCompletionsModel(model="m", openai_client=client),
    )
    loop = asyncio.new_event_loop()
    items: list = []
    times = []
    try:
        for _ in range(turns):
            started = time.perf_counter()
            result = loop.run_until_complete(Runner.run(agent, [*items, {"role": "user", "content": QUESTION}]))
            times.append(time.perf_counter() - started)
            assert result.final_output == ANSWER, result.final_output
            items = result.to_input_list()
    finally:
        loop.run_until_complete(client.close())
        loop.close()
    return times
