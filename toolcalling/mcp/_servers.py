"""``MCPServer``: an MCP server whose tools join an assistant's tools, over Streamable HTTP or stdio."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..exceptions import ImproperlyDefined
from ..toolkit import ApprovalRule, ToolContext
from ..toolkit._context import holds_permissions
from ._client import call_tool
from ._remote_tools import remote_tools
from ._sdk import require_sdk

if TYPE_CHECKING:
    from ..toolkit import Tool

Headers = Mapping[str, str] | Callable[[ToolContext], Mapping[str, str]]
RemoteApproval = bool | Collection[str] | Callable[[ToolContext, dict[str, Any]], bool]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")


class MCPServer:
    """An MCP server an assistant uses: ``MCPServer(url=...)`` or ``MCPServer(command=[...])``.

    ``class Helper(Assistant): mcp_servers = [MCPServer(url="https://mcp.example.com/mcp")]``. Its tools are
    listed when a turn starts (never at start-up), cached for ``cache_ttl`` seconds per set of headers, and
    offered with the assistant's own tools: validated against the server's JSON schema, gated like local
    tools, found by tool search. A server that is down, slow or answers an error makes the call's result
    say so; the turn goes on.

    Args:
        url: A Streamable HTTP endpoint.
        command: A stdio server, as the program and its arguments (``["npx", "-y", "some-server"]``).
        headers: HTTP headers, or a function of the ``ToolContext`` returning them (per-user tokens).
        env: Environment variables for a stdio server (the SDK passes only a safe few of this process's).
        cwd: Working directory of a stdio server.
        name: What messages and logs call the server, and the prefix of clashing names (default: from
            the URL's host or the command).
        prefix: Name every tool of this server ``<prefix>_<tool>``; without it, tools keep their names
            unless one is taken already, then they get ``<name>_`` in front.
        allowed_tools: Only these of the server's tools (by the server's names); ``None``: all.
        requires_approval: ``True`` (every tool), a collection of the server's tool names, or
            ``(ctx, args) -> bool`` as for ``@tool`` (``ctx.tool_call.name`` says which tool).
        permissions: Django permissions a user needs for this server's tools to be offered at all.
        timeout: Seconds one listing or call may take, connecting included.
        cache_ttl: Seconds a tool listing is reused (``0``: list for every turn).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        command: Sequence[str] | None = None,
        headers: Headers | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        prefix: str | None = None,
        allowed_tools: Collection[str] | None = None,
        requires_approval: RemoteApproval = False,
        permissions: Sequence[str] = (),
        timeout: float = 30.0,
        cache_ttl: float = 300.0,
    ) -> None:
        require_sdk()
        problems = []
        if (url is None) == (command is None):
            problems.append("give exactly one of url= (Streamable HTTP) or command=[...] (stdio)")
        if url is not None and urlsplit(url).scheme not in ("http", "https"):
            problems.append(f"url must be an http(s) URL, not {url!r}")
        if command is not None and (
            isinstance(command, str) or not command or any(not isinstance(c, str) for c in command)
        ):
            problems.append("command must be a non-empty list of strings, e.g. ['python', 'server.py']")
        if headers is not None and url is None:
            problems.append("headers= only applies to url= servers")
        if prefix is not None and not re.fullmatch(r"[a-zA-Z0-9_-]{1,30}", prefix):
            problems.append("prefix must be 1-30 letters, digits, '_' or '-'")
        if isinstance(allowed_tools, str) or isinstance(permissions, str):
            problems.append("allowed_tools and permissions must be lists of strings, not one string")
        if isinstance(requires_approval, str):
            problems.append("requires_approval must be a bool, a list of tool names or (ctx, args) -> bool")
        if timeout <= 0 or cache_ttl < 0:
            problems.append("timeout must be positive and cache_ttl not negative")
        if problems:
            raise ImproperlyDefined(f"MCPServer({url or command!r}) cannot be used: " + "; ".join(problems) + ".")
        self.url = url
        self.command = list(command) if command is not None else None
        self.headers = headers
        self.env = dict(env) if env is not None else None
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.name = name or _default_name(url, self.command)
        self.prefix = prefix
        self.allowed_tools = frozenset(allowed_tools) if allowed_tools is not None else None
        self.requires_approval = requires_approval
        self.permissions = tuple(permissions)
        self.timeout = float(timeout)
        self.cache_ttl = float(cache_ttl)

    # What the assistant asks ------------------------------------------------------------------------

    def get_tools(self, ctx: ToolContext, taken: Collection[str]) -> list[Tool]:
        """This server's tools for ``ctx`` (a ``ToolSource``): listed now or from the cache, names not in ``taken``."""
        if self.permissions and not holds_permissions(ctx.user, self.permissions):
            return []  # not even listed: the user could not be offered them anyway
        return remote_tools(self, ctx, taken)

    def call(self, ctx: ToolContext, tool_name: str, arguments: dict[str, Any]) -> str:
        """Call one of the server's tools (by its own name) for ``ctx``; its result as text."""
        return call_tool(self, self.resolve_headers(ctx), tool_name, arguments)

    # Details ------------------------------------------------------------------------------------------

    def resolve_headers(self, ctx: ToolContext) -> dict[str, str]:
        """The HTTP headers for ``ctx``'s user (``headers`` called with the context when it is a function)."""
        headers = self.headers(ctx) if callable(self.headers) else self.headers
        return {str(k): str(v) for k, v in (headers or {}).items()}

    def approval_rule(self, tool_name: str) -> ApprovalRule:
        """The ``requires_approval`` of one of the server's tools."""
        rule = self.requires_approval
        if isinstance(rule, bool) or callable(rule):
            return rule
        return tool_name in rule

    @property
    def identity(self) -> str:
        """What tells this server from others (its cache key): the URL, or the command and its directory."""
        return self.url or "\0".join([*(self.command or []), self.cwd or ""])

    @property
    def clash_prefix(self) -> str:
        return _UNSAFE.sub("_", self.name).strip("_")[:30] or "mcp"

    def __repr__(self) -> str:
        return f"<MCPServer {self.name!r} {self.url or ' '.join(self.command or [])}>"


def _default_name(url: str | None, command: list[str] | None) -> str:
    if url is not None:
        return urlsplit(url).hostname or "mcp"
    last = os.path.basename((command or ["mcp"])[-1]).removesuffix(".py")
    return last.rsplit(".", 1)[-1] or "mcp"
