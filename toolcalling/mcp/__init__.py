"""MCP both ways, with the official ``mcp`` SDK (``pip install 'django-toolcalling[mcp]'``).

Using MCP servers: ``MCPServer(url=...)`` or ``MCPServer(command=[...])`` in an assistant's ``mcp_servers``;
their tools join the assistant's tools (``_servers``, ``_remote_tools``, ``_client``).

Serving: ``toolcalling.urls`` serves ``mcp/<assistant_id>/`` (``MCPView``) and ``manage.py toolcalling_mcp``
serves stdio (``serve_stdio``); both answer with ``MCPEndpoint`` (``_protocol``), whose tool calls take the
chat's call path (``_serving``).

The SDK is imported only when MCP is used, so the app works without it; using MCP without it raises
``toolcalling.exceptions.MCPNotInstalled``.
"""

from ._servers import MCPServer
from ._stdio import serve_stdio
from ._view import MCPView

__all__ = [
    "MCPServer",
    "MCPView",
    "serve_stdio",
]
