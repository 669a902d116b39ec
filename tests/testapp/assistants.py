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


class SlowAssistant(Assistant):
    """For stopping turns: a tool that runs until the test releases it."""

    id = "slow"
    name = "Slow"
    instructions = "You run slow jobs."
    tools = ["add", "wait_for_release", "delete_everything"]


class BudgetAssistant(Assistant):
    """A limit of its own, defined in code, so web and worker processes enforce the same one."""

    id = "budget"
    name = "Budget"
    instructions = "You help within a budget."
    tools = ["add", "delete_everything"]
    usage_limits = [{"tokens": 1000, "per": "user", "period": "day"}]


class FilesAssistant(Assistant):
    """Reads the files users attach (tests/attachments)."""

    id = "files"
    name = "Files"
    instructions = "You read the files users send."
    tools = ["attached_files"]
