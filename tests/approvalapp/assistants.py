"""The assistant of the approval tests."""

from typing import Any

from toolcalling import Assistant


class OpsAssistant(Assistant):
    id = "ops"
    name = "Ops"
    instructions = "You run operations; some need a staff member's approval."
    tools = ["bump", "refund", "add", "whoami", "slow_bump"]

    def get_context_extra(self, user: Any, conversation: Any) -> dict[str, Any]:
        return {"tenant": "ops-tenant"}
