"""Assistants of the test site."""

from typing import Any

from toolcalling import Assistant


class HelperAssistant(Assistant):
    id = "helper"
    name = "Helper"
    description = "A test assistant."
    instructions = "You are a test helper."
    tools = ["whoami", "add", "ship", "explode", "direct_answer", "list_users", "delete_everything"]

    def get_context_extra(self, user: Any, conversation: Any) -> dict[str, Any]:
        return {"tenant": "acme"}
