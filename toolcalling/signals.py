"""Django signals around the loop, so a site can log, meter or notify in a few lines."""

from django.dispatch import Signal

# sender: the Assistant class. kwargs: turn, request (ModelRequest) / reply (ModelReply).
model_call_started = Signal()
model_call_finished = Signal()
# sender: the Assistant class. kwargs: turn, tool_call.
tool_call_started = Signal()
tool_call_finished = Signal()
# Approval. sender: ToolCall. kwargs: tool_call (and user, the approver or the cancelling user, where a
# person decided). Sent after the decision is stored; docs/guides/approval.md shows a notification receiver.
approval_requested = Signal()
tool_call_approved = Signal()
tool_call_rejected = Signal()  # also kwargs: reason
tool_call_cancelled = Signal()
tool_call_expired = Signal()
# A call whose process died while it ran, of a tool that may not run again, now waits for a person to say what
# happened (``outcome_unknown``); sent once, after the status is stored. sender: ToolCall. kwargs: tool_call.
tool_call_outcome_unknown = Signal()
# sender: the Assistant class. kwargs: turn, messages.
turn_finished = Signal()
