"""Helpers of the MCP tests: the SDK's client against the live site, and the SDK-built calc server."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from tests import services

ROOT = services.ROOT


def basic(username: str, password: str = "pw") -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def with_client(url: str, headers: dict[str, str], use: Callable[[Any], Awaitable[Any]]) -> Any:
    """Connect the SDK's ``Client`` to ``url`` over Streamable HTTP with ``headers``, run ``use(client)``."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def main() -> Any:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(30)))
            client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http)))
            return await use(client)

    return run_async(main)


def run_async(main: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine function in a thread of its own, whatever event loop this thread has (the browser
    tests' Playwright keeps one running); the client's task groups are unwrapped to what went wrong."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        try:
            return pool.submit(lambda: asyncio.run(main())).result()  # type: ignore[arg-type]
        except BaseExceptionGroup as group:
            raise innermost(group) from group


def innermost(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


class CalcServer:
    """The SDK-built ``tests.mcp.servers.calc`` served over Streamable HTTP in a subprocess."""

    def __init__(self, tmp_path: Path) -> None:
        self.port = services.free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.ledger = tmp_path / "ledger.txt"
        self.log = tmp_path / "calc.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        env = {**os.environ, "CALC_LEDGER": str(self.ledger)}
        command = [sys.executable, "-m", "tests.mcp.servers.calc", "--http", str(self.port)]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        services.wait_until(self._listening, timeout=30, what="the calc MCP server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:  # a tool still sleeping keeps a graceful shutdown waiting
                self.process.kill()
                self.process.wait(timeout=10)

    def charges(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def _listening(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"the calc server exited:\n{self.log.read_text()}")
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0


def calc_command() -> list[str]:
    """The same server over stdio, as a ``MCPServer(command=...)``."""
    return [sys.executable, "-m", "tests.mcp.servers.calc"]
