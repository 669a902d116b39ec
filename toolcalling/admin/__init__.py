"""The admin: conversations with their messages and calls, the tool call list staff decide on, usage, and
eval runs."""

from ._conversations import ConversationAdmin, MessageAdmin
from ._evals import EvalRunAdmin, add_to_dataset
from ._tool_calls import ToolCallAdmin
from ._usage import UsageCounterAdmin

# "Add to dataset" joins the conversations' actions here, so the conversation admin need not know evals.
ConversationAdmin.actions = [add_to_dataset]  # type: ignore[misc]  # the stubs declare it per instance

# The desk's actions are the tool call admin's methods; by these names too, a site's own admin may list them.
approve_selected = ToolCallAdmin.approve_selected
reject_selected = ToolCallAdmin.reject_selected

__all__ = [
    "ConversationAdmin",
    "EvalRunAdmin",
    "MessageAdmin",
    "ToolCallAdmin",
    "UsageCounterAdmin",
    "add_to_dataset",
    "approve_selected",
    "reject_selected",
]
