"""``ToolSource``: something that offers tools found at run time, such as an MCP server, rather than at import."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._context import ToolContext
    from ._tool import Tool


@runtime_checkable
class ToolSource(Protocol):
    """Offers tools for one context (one user's turn). An assistant lists its sources in ``mcp_servers``.

    ``get_tools`` is called when a turn starts, never at import or start-up, so a source may ask the
    network (and should cache). ``taken`` holds the names already offered: a source must not reuse
    them. A source that cannot list its tools returns what it can (or nothing); it never raises for that.
    """

    def get_tools(self, ctx: ToolContext, taken: Collection[str]) -> list[Tool]: ...
