"""Cases made from stored conversations (the admin's "add to dataset"), as the data of a dataset file: who
said what, how the gated calls were decided (only a person's approval is exported as ``approve``), and the tool
calls that were made. Needs no pydantic-evals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..models import Conversation, Message, ToolCall

# Statuses a gated call reaches only once approved: it is ``approve`` only if a decision was recorded, too.
APPROVED = (ToolCall.Status.APPROVED, ToolCall.Status.RUNNING, ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED)
# What became of a call nobody approved, as a case replays it; a status not named here leaves the call waiting.
DECISIONS: dict[str, str] = {
    ToolCall.Status.REJECTED: "reject",
    ToolCall.Status.CANCELLED: "cancel",  # by the user, or withdrawn by a stopped turn
    ToolCall.Status.EXPIRED: "expire",
    ToolCall.Status.AWAITING_APPROVAL: "wait",
}


def decision_of(call: ToolCall) -> str:
    """How a gated call was decided, as a case's ``decisions`` say it: ``approve`` only for a call a person
    approved (a decision recorded, and the call approved or run since), never for one cancelled or expired."""
    if call.status in APPROVED and call.decided_at is not None:
        return "approve"
    return DECISIONS.get(call.status, "wait")


def case_from_conversation(conversation: Conversation) -> dict[str, Any]:
    """A case that asks the same, expects the same tool calls in the same order, and decides gated calls as
    they were decided; its answer is for the dataset's author to check (no answer evaluator is guessed)."""
    user_messages = conversation.messages.filter(role=Message.Role.USER).order_by("id")
    calls = list(conversation.tool_calls.order_by("id"))
    decisions: dict[str, str] = {}
    for call in calls:
        if call.requires_approval and decisions.get(call.name, "approve") == "approve":
            # Decisions go by tool name: a tool is approved in the case only if every call of it was.
            decisions[call.name] = decision_of(call)
    inputs: dict[str, Any] = {
        "assistant": conversation.assistant_id,
        "user": conversation.user.get_username() if conversation.user is not None else "",
        "messages": [m.content for m in user_messages],
    }
    if decisions:
        inputs["decisions"] = decisions
    expected = [{"name": c.name, "arguments": c.arguments or {}} for c in calls]
    return {
        "name": f"conversation-{conversation.pk}",
        "inputs": inputs,
        "evaluators": [{"ToolCalls": {"calls": expected, "only": True}}],
    }


def cases_yaml(cases: list[dict[str, Any]], name: str = "cases") -> str:
    """A dataset file of ``cases``, in pydantic-evals' YAML format."""
    import yaml

    return yaml.safe_dump({"name": name, "cases": cases}, allow_unicode=True, sort_keys=False)


def append_cases(path: str | Path, cases: list[dict[str, Any]]) -> int:
    """Add ``cases`` to the YAML dataset at ``path`` (made if missing), replacing cases of the same name;
    how many cases the file holds afterwards."""
    import yaml

    target = Path(path)
    data = yaml.safe_load(target.read_text(encoding="utf-8")) if target.exists() else None
    data = data or {"name": target.stem, "cases": []}
    names = {case["name"] for case in cases}
    data["cases"] = [c for c in data.get("cases") or [] if c.get("name") not in names] + cases
    target.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return len(data["cases"])
