"""The admin: conversations with their messages and calls, the tool call list staff decide on, and usage."""

from ._actions import approve_selected, reject_selected
from ._conversations import ConversationAdmin, MessageAdmin
from ._tool_calls import ToolCallAdmin
from ._usage import UsageCounterAdmin

__all__ = [
    "ConversationAdmin",
    "MessageAdmin",
    "ToolCallAdmin",
    "UsageCounterAdmin",
    "approve_selected",
    "reject_selected",
]
