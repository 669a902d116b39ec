"""An MCP server's tools as ``Tool`` objects: named without clashes, validated against the server's JSON
schema, and listed through Django's cache so a turn rarely waits for the server.

The listing is cached per server and per set of headers (so per-user tokens get their own lists) for
``cache_ttl`` seconds. When the server cannot be listed, the last good listing is used, and the failure is
remembered for a short while so a server that is down does not slow every turn.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from pydantic import BaseModel, ConfigDict

from ..exceptions import InvalidArguments, MCPServerError
from ..toolkit import NAME_RE, ApprovalRule, Tool, ToolContext, arguments_object
from ._client import Endpoint, RemoteToolInfo, list_tools


class ToolServer(Endpoint, Protocol):
    """What listing and offering a server's tools takes (an ``MCPServer`` is one)."""

    prefix: str | None
    allowed_tools: frozenset[str] | None
    permissions: tuple[str, ...]
    cache_ttl: float

    @property
    def identity(self) -> str: ...

    @property
    def clash_prefix(self) -> str: ...

    def resolve_headers(self, ctx: ToolContext) -> dict[str, str]: ...

    def approval_rule(self, tool_name: str) -> ApprovalRule: ...

    def call(self, ctx: ToolContext, tool_name: str, arguments: dict[str, Any]) -> str: ...


logger = logging.getLogger("toolcalling")

# Seconds a failed listing is remembered before the server is asked again.
RETRY_AFTER = 30.0


class RemoteArguments(BaseModel):
    """Validated arguments of a remote tool: any JSON object its schema accepts, kept as it is."""

    model_config = ConfigDict(extra="allow")


@dataclass(kw_only=True, eq=False)
class RemoteTool(Tool):
    """A tool of an MCP server. Its arguments are checked against the server's JSON schema; running it calls
    the server (in the request, or on the worker once a gated call is approved)."""

    server: ToolServer = field(repr=False)
    """The server that has the tool."""
    remote_name: str
    """The server's name of the tool (``name`` may carry a prefix)."""
    arguments_model: type[BaseModel] = field(default=RemoteArguments, repr=False)

    @property
    def module(self) -> str:
        return f"mcp:{self.server.name}.{self.remote_name}"

    def parse_arguments(self, raw: str | dict[str, Any] | None, *, strict: bool = False) -> BaseModel:
        data = arguments_object(raw)
        problems = schema_problems(self.parameters, data)  # JSON schema validation coerces nothing: always strict
        if problems:
            raise InvalidArguments("; ".join(problems))
        return RemoteArguments.model_validate(data)

    def invoke(self, ctx: ToolContext, arguments: BaseModel) -> Any:
        return self.func(ctx, **arguments.model_dump(mode="json"))


def schema_problems(schema: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """What is wrong with ``data`` under a JSON schema, one short line per problem, as the model reads them."""
    from jsonschema import exceptions, validators

    validator_class = validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except exceptions.SchemaError:
        return []  # the server's schema is broken; let the server judge the arguments
    errors = sorted(validator_class(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}" for e in errors]


def remote_tools(server: ToolServer, ctx: ToolContext, taken: Collection[str]) -> list[Tool]:
    """The server's tools for ``ctx``: allowed ones, each under a name nobody else uses."""
    extras = ctx.assistant.argument_extras if ctx.assistant is not None else None
    extra_names = set(extras.model_fields) if extras is not None else set()
    names = set(taken)
    tools: list[Tool] = []
    for info in listing(server, server.resolve_headers(ctx)):
        if server.allowed_tools is not None and info.name not in server.allowed_tools:
            continue
        name = _free_name(server, info.name, names)
        clashing = sorted(extra_names & set(info.input_schema.get("properties") or {}))
        if name is None or clashing:
            why = f"parameters named like argument extras ({', '.join(clashing)})" if clashing else "no free name"
            logger.warning("MCP server %r: tool %r is not offered: %s", server.name, info.name, why)
            continue
        names.add(name)
        tools.append(_make(server, info, name))
    return tools


def listing(server: ToolServer, headers: dict[str, str]) -> list[RemoteToolInfo]:
    """The server's tools from the cache, else from the server; the last good listing if it cannot answer."""
    cache = caches[DEFAULT_CACHE_ALIAS]
    digest = hashlib.sha256(json.dumps([server.identity, sorted(headers.items())]).encode()).hexdigest()
    key, last_key = f"toolcalling:mcp:{digest}", f"toolcalling:mcp:{digest}:last"
    entry = cache.get(key)
    if entry is None:
        try:
            found = list_tools(server, headers)
        except MCPServerError as exc:
            logger.warning("%s; its tools are left out until it answers again", exc)
            cache.set(key, {"error": str(exc)}, timeout=min(server.cache_ttl, RETRY_AFTER))
            entry = cache.get(last_key) or {"tools": []}
        else:
            entry = {"tools": [dataclasses.asdict(info) for info in found]}
            cache.set(key, entry, timeout=server.cache_ttl)
            cache.set(last_key, entry, timeout=None)
    elif "error" in entry:
        entry = cache.get(last_key) or {"tools": []}
    return [RemoteToolInfo(**item) for item in entry["tools"]]


def _free_name(server: ToolServer, remote: str, taken: set[str]) -> str | None:
    """The tool's name here: the server's (made valid for the model), prefixed as configured or on a clash."""
    base = "".join(c if c.isalnum() or c in "_-" else "_" for c in remote)
    if server.prefix is not None:
        candidates = [f"{server.prefix}_{base}"]
    else:
        candidates = [base, f"{server.clash_prefix}_{base}"]
    for candidate in candidates:
        candidate = candidate[:64]
        if NAME_RE.match(candidate) and candidate not in taken:
            return candidate
    return None


def _make(server: ToolServer, info: RemoteToolInfo, name: str) -> RemoteTool:
    schema = dict(info.input_schema)
    schema["type"] = "object"
    schema.setdefault("properties", {})

    def call(ctx: ToolContext, /, **arguments: Any) -> str:
        return server.call(ctx, info.name, arguments)

    call.__name__ = call.__qualname__ = name
    return RemoteTool(
        func=call,
        name=name,
        description=info.description or f"The {info.name} tool of the MCP server {server.name}.",
        requires_approval=server.approval_rule(info.name),
        permissions=server.permissions,
        parameters=schema,
        server=server,
        remote_name=info.name,
    )
