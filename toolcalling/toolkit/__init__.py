"""The toolkit: what a tool is (``@tool``, ``Tool``, its schema and context), the registries that hold tools
and assistants, argument extras, tool search, and ``ToolSource`` (tools found at run time, such as an MCP
server's). It knows nothing of turns, storage or HTTP.

Only what other packages of the app use is named here; the rest stays in the private modules."""

from ._assistant import AssistantLike
from ._client_tool import FRONTEND_TOOLS_KEY, ClientTool, client_result, frontend_tools
from ._context import ToolContext
from ._extras import check_extras, split_extras, with_extras
from ._registry import assistants, tool, tool_label, tools
from ._schema import describe_validation_error
from ._search import SEARCH_TOOL_NAME, ToolSearch, search_enabled
from ._sources import ToolSource
from ._text import MAX_JSON_DEPTH, nested_too_deeply, storable, storable_json, unique_call_ids
from ._tool import NAME_RE, ApprovalRule, Tool, arguments_object, result_to_text

__all__ = [
    "AssistantLike",
    "ClientTool",
    "FRONTEND_TOOLS_KEY",
    "client_result",
    "frontend_tools",
    "NAME_RE",
    "SEARCH_TOOL_NAME",
    "ApprovalRule",
    "Tool",
    "ToolContext",
    "ToolSearch",
    "ToolSource",
    "assistants",
    "arguments_object",
    "check_extras",
    "describe_validation_error",
    "result_to_text",
    "search_enabled",
    "split_extras",
    "storable",
    "storable_json",
    "MAX_JSON_DEPTH",
    "nested_too_deeply",
    "tool",
    "tool_label",
    "tools",
    "unique_call_ids",
    "with_extras",
]
