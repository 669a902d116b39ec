"""Conversations, their messages and the tool calls the model asked for, stored in the site's database."""

from .attachments import Attachment
from .conversations import Conversation, Message
from .evals import EvalCaseResult, EvalRun
from .tool_calls import ToolCall
from .usage import USAGE_SCOPE_LABELS, UsageCounter

__all__ = [
    "USAGE_SCOPE_LABELS",
    "Attachment",
    "Conversation",
    "EvalCaseResult",
    "EvalRun",
    "Message",
    "ToolCall",
    "UsageCounter",
]
