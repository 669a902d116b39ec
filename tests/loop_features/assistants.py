"""Assistants used by the loop feature tests; each sets the one feature its tests exercise."""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import BaseModel, Field

from toolcalling import Assistant
from toolcalling.hooks import Hook

from .catalog import CATALOG

BASE_TOOLS = ["whoami", "add", "explode", "direct_answer", "delete_everything"]


class Recorder(Hook):
    """Writes every step it sees into ``log`` (shared list), tagged with its own name."""

    def __init__(self, name: str, log: list[tuple[str, str]]) -> None:
        self.name = name
        self.log = log

    def on_turn_start(self, turn: Any) -> None:
        self.log.append((self.name, "on_turn_start"))

    def before_model_call(self, turn: Any, request: Any) -> None:
        self.log.append((self.name, "before_model_call"))

    def after_model_call(self, turn: Any, reply: Any) -> None:
        self.log.append((self.name, "after_model_call"))

    def before_tool_call(self, turn: Any, call: Any, arguments: Any) -> None:
        self.log.append((self.name, f"before_tool_call:{call.name}"))

    def after_tool_call(self, turn: Any, call: Any, result: str) -> None:
        self.log.append((self.name, f"after_tool_call:{call.name}"))

    def on_turn_end(self, turn: Any, messages: Any) -> None:
        self.log.append((self.name, "on_turn_end"))


class HookedAssistant(Assistant):
    id = "lf_hooked"
    instructions = "Hooked."
    tools = BASE_TOOLS
    hooks: list[Any] = []  # tests set this per test with override


class FinalMemoryAssistant(Assistant):
    id = "lf_final"
    instructions = "Final memory."
    tools = BASE_TOOLS
    memory = "final"


class BudgetAssistant(Assistant):
    id = "lf_budget"
    instructions = "Budget."
    tools = BASE_TOOLS
    history_max_messages = 6


class TokenBudgetAssistant(Assistant):
    id = "lf_token_budget"
    instructions = "Token budget."
    tools = BASE_TOOLS
    history_max_tokens = 120


class Verdict(BaseModel):
    answer: str = Field(description="The short answer.")
    confidence: float = Field(ge=0, le=1)


class StructuredAssistant(Assistant):
    id = "lf_structured"
    instructions = "Answer as JSON."
    tools = BASE_TOOLS
    output_type = Verdict
    output_retries = 2


class JsonObjectAssistant(StructuredAssistant):
    id = "lf_json_object"
    output_mode = "json_object"


class SearchAssistant(Assistant):
    id = "lf_search"
    instructions = "Many tools."
    tools = CATALOG
    tool_search = None  # on: 100 tools is above the default threshold of 30


class NoSearchAssistant(Assistant):
    id = "lf_no_search"
    instructions = "Many tools."
    tools = CATALOG
    tool_search = False


class Why(BaseModel):
    reasoning: str = Field(description="Why you call this tool now.")
    confidence: float = Field(ge=0, le=1, description="How sure you are that it is the right call.")


class ExtrasAssistant(Assistant):
    id = "lf_extras"
    instructions = "Explain each call."
    tools = BASE_TOOLS
    argument_extras = Why
    seen: list[tuple[str, Why]] = []

    def on_argument_extras(self, call: Any, extras: Why) -> None:
        type(self).seen.append((call.name, extras))


class When(BaseModel):
    due: date = Field(description="The day the user wants it done.")


class DatedExtrasAssistant(Assistant):
    """Extras with a date: stored as JSON text, where a Python dump would hold a ``date`` object."""

    id = "lf_dated_extras"
    instructions = "Say when."
    tools = BASE_TOOLS
    argument_extras = When


class ResponsesAssistant(Assistant):
    """Speaks the Responses API whatever TOOLCALLING["API"] says, with a reasoning model."""

    id = "lf_responses"
    instructions = "You help with sums."
    tools = BASE_TOOLS
    api = "responses"
    model = "gpt-5-mini"
    model_options = {"reasoning": {"effort": "low"}}


class AnthropicAssistant(Assistant):
    """Speaks Anthropic's Messages API whatever TOOLCALLING["API"] says, with extended thinking on."""

    id = "lf_anthropic"
    instructions = "You help with sums."
    tools = BASE_TOOLS
    api = "anthropic"
    model = "claude-sonnet-4-5"
    model_options = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}


class AnthropicStructuredAssistant(StructuredAssistant):
    """Structured output on Anthropic's Messages API (``output_config.format``)."""

    id = "lf_anthropic_structured"
    api = "anthropic"
    model = "claude-sonnet-4-5"


class DatedInstructionsAssistant(Assistant):
    """Instructions built for each request: they name the day, which the tests move on between turns."""

    id = "lf_dated_instructions"
    tools = BASE_TOOLS
    today = "Monday"

    def get_instructions(self, ctx: Any) -> str:
        return f"You help with sums. Today is {type(self).today}."
