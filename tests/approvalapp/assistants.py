"""The assistant of the approval tests."""

import os
import signal
from typing import Any

from toolcalling import Assistant, ClientTool
from toolcalling.hooks import Hook


class OpsAssistant(Assistant):
    id = "ops"
    name = "Ops"
    instructions = "You run operations; some need a staff member's approval."
    tools = ["bump", "refund", "add", "whoami", "slow_bump", "move_points", "reset"]

    def get_context_extra(self, user: Any, conversation: Any) -> dict[str, Any]:
        return {"tenant": "ops-tenant"}


class OpsResponsesAssistant(OpsAssistant):
    """The ops assistant on the Responses API with a reasoning model, for the tests that run on each API."""

    id = "ops_responses"
    api = "responses"
    model = "gpt-5-mini"


class OpsAnthropicAssistant(OpsAssistant):
    """The ops assistant on Anthropic's Messages API with extended thinking on, for the tests that run on each API."""

    id = "ops_anthropic"
    api = "anthropic"
    model = "claude-sonnet-4-5"
    model_options = {"thinking": {"type": "enabled", "budget_tokens": 1024}}


class Stamp(Hook):
    """Marks every tool result, so a test sees that the worker ran the assistant's hooks too."""

    def after_tool_call(self, turn: Any, call: Any, result: str) -> str:
        return f"{result} (checked by the ops hook)"


class OpsHookedAssistant(OpsAssistant):
    """The ops assistant with a hook, for the test that a worker-run approved call passes through it."""

    id = "ops_hooked"
    hooks = [Stamp()]


class ClerkAssistant(Assistant):
    """Only for users with a permission, so a test can take the assistant away while a call waits."""

    id = "clerk"
    name = "Clerk"
    permission = "approvalapp.view_counter"
    tools = ["bump"]


class StamperAssistant(Assistant):
    """For bench/approval_latency.py: one gated tool that writes down when it started."""

    id = "stamper"
    name = "Stamper"
    tools = ["stamp"]


class TillAssistant(Assistant):
    """Tools with effects outside the database, some safe to run again: for the tests of interrupted calls."""

    id = "till"
    name = "Till"
    tools = ["charge", "send_receipt", "approved_charge", "approved_receipt", "confirmed_charge", "book_seat"]


class KillAt(Hook):
    """Kills its own process with SIGKILL at the step ``TOOLCALLING_TEST_KILL_AT`` names (``after_tool_call:1``: once
    the first tool has run, before its result is stored; ``before_model_call:2``: once the first results are stored,
    before the second request), as the OOM killer or a deploy would: nothing after it runs, not even ``finally``."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def _step(self, name: str) -> None:
        self.seen[name] = self.seen.get(name, 0) + 1
        if os.environ.get("TOOLCALLING_TEST_KILL_AT") == f"{name}:{self.seen[name]}":
            os.kill(os.getpid(), signal.SIGKILL)

    def before_model_call(self, turn: Any, request: Any) -> None:
        self._step("before_model_call")

    def after_tool_call(self, turn: Any, call: Any, result: str) -> str | None:
        self._step("after_tool_call")
        return None


class MortalTillAssistant(TillAssistant):
    """The till in a process that a test kills at one step of its turn (see ``KillAt``)."""

    id = "till_mortal"

    def get_hooks(self) -> list[Any]:
        return [*super().get_hooks(), KillAt()]


class CourierAssistant(Assistant):
    """The chaos run's assistant (bench/chaos.py): each turn charges and sends a receipt through outside services."""

    id = "courier"
    name = "Courier"
    tools = ["courier_charge", "courier_receipt"]


PICK_COLOR = ClientTool(
    name="pick_color",
    description="Ask the user to pick a colour on the page.",
    parameters={"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    result_schema={"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
)


class BrowserAssistant(Assistant):
    """Server tools beside a tool the browser runs (``pick_color``); the tools a frontend sends are offered too."""

    id = "browser"
    name = "Browser"
    tools = ["bump", "move_points"]
    client_tools = [PICK_COLOR]
    accept_frontend_tools = True
