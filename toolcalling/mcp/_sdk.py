"""The official ``mcp`` SDK is optional (the ``[mcp]`` extra): it is imported only where MCP is used."""

from __future__ import annotations

from ..exceptions import MCPNotInstalled


def require_sdk() -> None:
    """Fail with a clear ``MCPNotInstalled`` when the ``mcp`` package cannot be imported."""
    try:
        import mcp.types  # noqa: F401
    except ImportError as exc:
        raise MCPNotInstalled() from exc
