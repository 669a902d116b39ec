"""The admin: conversations with their messages and calls, and the tool call list staff decide on."""

from ._actions import approve_selected, reject_selected
from ._conversations import ConversationAdmin, MessageAdmin
from ._tool_calls import ToolCallAdmin

__all__ = ["ConversationAdmin", "MessageAdmin", "ToolCallAdmin", "approve_selected", "reject_selected"]
