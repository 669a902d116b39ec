"""The MCP server's JSON-RPC: ``initialize``, ``ping``, ``tools/list`` and ``tools/call`` for one assistant and
one authenticated user, on the official SDK's wire types (``mcp.types``).

It keeps no state between messages, so it serves stateless Streamable HTTP (any web worker answers any
request: no session id, no sticky sessions) and stdio alike. It speaks the protocol revisions that begin with
the ``initialize`` handshake; a client that probes for a newer revision (``server/discover``) is told which
ones are supported and falls back to the handshake, as the SDK's client does.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..conf import toolcalling_settings
from ..toolkit import MAX_JSON_DEPTH, nested_too_deeply, storable_json
from ._sdk import require_sdk
from ._serving import ServedTools, UnknownTool

if TYPE_CHECKING:
    from ..assistant import Assistant

logger = logging.getLogger("toolcalling")

SERVER_NAME = "django-toolcalling"

# JSON-RPC's own codes (mcp.types has them too, but importing it needs the SDK, which the view may not have).
PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR = -32700, -32600, -32603


@dataclass(kw_only=True)
class Reply:
    """What to send back: a JSON body (``None``: nothing, the input held only notifications) and an HTTP status."""

    body: Any
    status: int = 200


class ProtocolError(Exception):
    """A JSON-RPC error answer (``code``, ``message``, ``data``), with the HTTP status it goes out with."""

    def __init__(self, code: int, message: str, data: Any = None, *, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status


class MCPEndpoint:
    """Answers MCP messages for ``assistant`` and ``user``; the user is authenticated by the transport."""

    def __init__(self, assistant: Assistant, user: Any) -> None:
        require_sdk()
        self.assistant = assistant
        self.tools = ServedTools(assistant, user)

    def handle_bytes(self, body: bytes, *, protocol_version: str | None = None) -> Reply:
        """Answer a message as it arrived (an HTTP body, a stdio line); text that is not JSON is a parse error."""
        payload = self.read(body)
        if isinstance(payload, Reply):
            return payload
        return self.handle(payload, protocol_version=protocol_version)

    def read(self, body: bytes) -> Any:
        """The JSON-RPC message or batch in ``body``, or the error ``Reply`` for input that cannot be one.

        Text that is not JSON (not UTF-8, or nested past what the parser takes) is a parse error; a batch
        longer than ``MCP_MAX_BATCH`` is refused whole, before any of it runs. Lone surrogates and NUL (valid
        JSON, but text no database or UTF-8 encoder takes) become U+FFFD, as they do in a model's arguments.
        """
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested too deeply
            return self._error_reply(None, ProtocolError(PARSE_ERROR, f"Parse error: {exc}", status=400))
        # The arguments' own limit is MAX_JSON_DEPTH; the envelope around them takes a few levels more.
        if nested_too_deeply(payload, MAX_JSON_DEPTH + 8):
            problem = f"Invalid request: nested more than {MAX_JSON_DEPTH} levels deep."
            return self._error_reply(None, ProtocolError(INVALID_REQUEST, problem, status=400))
        if isinstance(payload, list) and len(payload) > toolcalling_settings.MCP_MAX_BATCH:
            problem = f"Invalid request: a batch holds at most {toolcalling_settings.MCP_MAX_BATCH} messages."
            return self._error_reply(None, ProtocolError(INVALID_REQUEST, problem, status=400))
        return storable_json(payload)

    def refuse(self, code: int, message: str, *, status: int = 400) -> Reply:
        """The error reply for input that is not a message at all (no id to answer)."""
        return self._error_reply(None, ProtocolError(code, message, status=status))

    @staticmethod
    def requests_in(payload: Any) -> int:
        """How many requests (messages with a method and an id) a read message or batch holds."""
        items = payload if isinstance(payload, list) else [payload]
        return sum(1 for item in items if isinstance(item, dict) and "method" in item and "id" in item)

    def handle(self, payload: Any, *, protocol_version: str | None = None) -> Reply:
        """Answer one parsed JSON-RPC message or batch. ``protocol_version`` is the ``MCP-Protocol-Version``
        header of an HTTP request, checked as the transport requires."""
        if isinstance(payload, list):  # a batch (protocol 2025-03-26); answered in order, notifications silently
            if not payload:
                return self._error_reply(None, ProtocolError(INVALID_REQUEST, "Empty batch.", status=400))
            replies = [
                self.handle(item, protocol_version=protocol_version)
                if isinstance(item, dict)
                else self._error_reply(None, ProtocolError(INVALID_REQUEST, "Not a JSON-RPC 2.0 message."))
                for item in payload
            ]
            bodies = [r.body for r in replies if r.body is not None]
            return Reply(body=bodies or None, status=200 if bodies else 202)
        request_id = payload.get("id") if isinstance(payload, dict) else None
        try:
            if protocol_version is not None:
                self._check_version(protocol_version)
            result = self._dispatch(payload)
        except ProtocolError as exc:
            return self._error_reply(request_id, exc)
        if result is None:
            return Reply(body=None, status=202)
        return Reply(body={"jsonrpc": "2.0", "id": request_id, "result": result})

    # Messages ---------------------------------------------------------------------------------------

    def _dispatch(self, payload: Any) -> dict[str, Any] | None:
        from mcp.types import METHOD_NOT_FOUND, JSONRPCRequest

        if not isinstance(payload, dict) or payload.get("jsonrpc") != "2.0":
            raise ProtocolError(INVALID_REQUEST, "Not a JSON-RPC 2.0 message.", status=400)
        if "method" not in payload or "id" not in payload:
            return None  # a notification, or the client's answer to a request we never send: nothing to say
        try:
            request = JSONRPCRequest.model_validate(payload)
        except ValidationError as exc:
            raise ProtocolError(INVALID_REQUEST, f"Invalid request: {exc.errors()[0]['msg']}", status=400)
        handler = {
            "initialize": self.initialize,
            "ping": self.ping,
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
            "server/discover": self.discover,
        }.get(request.method)
        if handler is None:
            raise ProtocolError(METHOD_NOT_FOUND, f"Method not found: {request.method}")
        return handler(request.params or {})

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        from mcp.types import (
            Implementation,
            InitializeRequestParams,
            InitializeResult,
            ServerCapabilities,
            ToolsCapability,
        )
        from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

        request = _parse(InitializeRequestParams, params)
        wanted = request.protocol_version
        version = wanted if wanted in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
        result = InitializeResult(
            protocol_version=version,
            capabilities=ServerCapabilities(tools=ToolsCapability(list_changed=False)),
            server_info=Implementation(name=SERVER_NAME, title=str(self.assistant.name), version=_version()),
            instructions=str(self.assistant.description) or None,
        )
        return _dump(result)

    def ping(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def list_tools(self, params: dict[str, Any]) -> dict[str, Any]:
        from mcp.types import ListToolsResult, PaginatedRequestParams, Tool

        _parse(PaginatedRequestParams, params)  # one page holds every tool; a cursor is ignored
        return _dump(ListToolsResult(tools=[Tool.model_validate(t) for t in self.tools.listing()]))

    def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        from mcp.types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, TextContent

        request = _parse(CallToolRequestParams, params)
        try:
            outcome = self.tools.call(request.name, request.arguments)
        except UnknownTool:
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {request.name}")
        result = CallToolResult(
            content=[TextContent(type="text", text=outcome.text)],
            structured_content=outcome.data,
            is_error=outcome.error,
        )
        return _dump(result)

    def discover(self, params: dict[str, Any]) -> dict[str, Any]:
        """A client probing for the per-request protocol revisions: name the handshake ones instead."""
        meta = params.get("_meta")
        wanted = meta.get("io.modelcontextprotocol/protocolVersion", "") if isinstance(meta, dict) else ""
        raise _unsupported(str(wanted))

    # Helpers ----------------------------------------------------------------------------------------

    def _check_version(self, version: str) -> None:
        from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise _unsupported(version)

    def _error_reply(self, request_id: Any, exc: ProtocolError) -> Reply:
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return Reply(body={"jsonrpc": "2.0", "id": request_id, "error": error}, status=exc.status)


def _unsupported(version: str) -> ProtocolError:
    """The error that names the supported revisions (the SDK's client then falls back to ``initialize``)."""
    from mcp.types import UNSUPPORTED_PROTOCOL_VERSION
    from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

    data = {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version}
    return ProtocolError(UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {version}", data, status=400)


def _parse(model: Any, params: dict[str, Any]) -> Any:
    from mcp.types import INVALID_PARAMS

    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors())
        raise ProtocolError(INVALID_PARAMS, f"Invalid params: {problems}")


def _dump(result: Any) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def _version() -> str:
    from ._client import _version as package_version

    return package_version()
