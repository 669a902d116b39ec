"""Talking to an MCP server with the official SDK's ``Client``, from the synchronous loop.

Each operation opens its own connection (an HTTP exchange, or a fresh stdio process), does one thing and
closes it: nothing is shared between threads, processes or a web worker and a Celery worker, which is what
lets any of them run a remote tool. The SDK is asynchronous; each operation runs in its own event loop,
in a separate thread when the caller's thread already runs one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..exceptions import MCPServerError, MCPToolError
from ._sdk import require_sdk

T = TypeVar("T")


class Endpoint(Protocol):
    """What connecting to a server takes (an ``MCPServer`` is one): its address and how long to wait."""

    name: str
    url: str | None
    command: list[str] | None
    env: dict[str, str] | None
    cwd: str | None
    timeout: float


CLIENT_NAME = "django-toolcalling"


@dataclass(kw_only=True, frozen=True)
class RemoteToolInfo:
    """One tool as an MCP server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


def list_tools(server: Endpoint, headers: Mapping[str, str]) -> list[RemoteToolInfo]:
    """Every tool the server lists (all pages); ``MCPServerError`` when it cannot be asked."""

    async def operation(client: Any) -> list[RemoteToolInfo]:
        found: list[RemoteToolInfo] = []
        cursor = None
        for _ in range(100):  # a server whose pages never end cannot hang a turn
            page = await client.list_tools(cursor=cursor)
            found += [
                RemoteToolInfo(name=t.name, description=t.description or t.title or "", input_schema=t.input_schema)
                for t in page.tools
            ]
            cursor = page.next_cursor
            if not cursor:
                break
        return found

    return _run(server, headers, operation, "listing its tools")


def call_tool(server: Endpoint, headers: Mapping[str, str], name: str, arguments: dict[str, Any]) -> str:
    """Call one tool; its result as text for the model. ``MCPToolError`` for an ``isError`` result."""

    async def operation(client: Any) -> Any:
        return await client.call_tool(name, arguments)

    result = _run(server, headers, operation, f"calling {name}")
    text = result_text(result)
    if result.is_error:
        raise MCPToolError(text or "the tool failed without saying why")
    return text


def result_text(result: Any) -> str:
    """A ``CallToolResult`` as the text the model reads: its text blocks, else its structured content as JSON."""
    import json

    texts = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            texts.append(block.resource.text)
        elif kind == "resource_link":
            texts.append(f"[{block.name}: {block.uri}]")
        else:  # images and audio cannot reach a text-only model; say what was left out
            texts.append(f"[{kind} content: {getattr(block, 'mime_type', '') or 'binary'}]")
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(texts)


def _run(server: Endpoint, headers: Mapping[str, str], operation: Callable[[Any], Awaitable[T]], doing: str) -> T:
    """Connect, run ``operation`` with the connected client, disconnect; any failure is an ``MCPServerError``."""
    require_sdk()
    import anyio

    async def main() -> T:
        with anyio.fail_after(server.timeout):
            async with _client(server, headers) as client:
                return await operation(client)

    try:
        return _in_event_loop(main)
    except TimeoutError:
        raise MCPServerError(f"the MCP server {server.name!r} did not answer within {server.timeout:g} s ({doing})")
    except Exception as exc:
        raise MCPServerError(f"the MCP server {server.name!r} failed ({doing}): {_describe(exc)}") from exc


def _client(server: Endpoint, headers: Mapping[str, str]) -> Any:
    """The SDK's ``Client`` for this server: Streamable HTTP with the headers, or a stdio subprocess."""
    from contextlib import AsyncExitStack, asynccontextmanager

    import httpx2
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    info = Implementation(name=CLIENT_NAME, version=_version())

    @asynccontextmanager
    async def connected() -> Any:
        async with AsyncExitStack() as stack:
            if server.url is not None:
                # A plain client, as the SDK's transports make one: redirects are not followed (the transport follows
                # those that stay on the server's origin itself).
                http = httpx2.AsyncClient(headers=dict(headers), timeout=httpx2.Timeout(server.timeout))
                await stack.enter_async_context(http)
                target: Any = streamable_http_client(server.url, http_client=http, terminate_on_close=True)
            else:
                command, *args = server.command or []
                target = StdioServerParameters(command=command, args=args, env=server.env, cwd=server.cwd)
            client = Client(target, read_timeout_seconds=server.timeout, client_info=info, cache=None)
            yield await stack.enter_async_context(client)

    return connected()


def _in_event_loop(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine function to completion from synchronous code, whatever runs in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # Called from inside an event loop (an async view, say): the loop cannot be blocked on, so use a thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(main())).result()


def _describe(exc: BaseException) -> str:
    """The innermost cause of a failure, task groups unwrapped: what a reader of the tool result can act on."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or getattr(getattr(exc, "error", None), "message", "")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("django-toolcalling")
    except PackageNotFoundError:  # a checkout that is not installed
        return "0"
