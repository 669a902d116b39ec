"""``AssistantLike``: what the machinery below ``toolcalling.assistant`` knows of an assistant."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..models import Conversation, ToolCall
    from ._context import ToolContext
    from ._tool import Tool


class AssistantLike(Protocol):
    """An assistant as the toolkit, usage limits, hooks and the engine use it; ``toolcalling.Assistant`` is one.

    They know this much and never import ``Assistant`` itself (which builds on them), not even to type-check.
    """

    id: ClassVar[str | None]
    name: ClassVar[str]
    description: ClassVar[str]
    model_options: ClassVar[dict[str, Any]]
    memory: ClassVar[str]
    history_max_messages: ClassVar[int | None]
    history_max_tokens: ClassVar[int | None]
    tool_search: ClassVar[bool | None]
    tool_search_results: ClassVar[int]
    argument_extras: ClassVar[type[BaseModel] | None]

    def has_permission(self, user: Any) -> bool: ...
    def build_context(self, user: Any, conversation: Conversation | None = None) -> ToolContext: ...
    def get_instructions(self, ctx: ToolContext) -> str: ...
    def get_model(self) -> str: ...
    def get_api(self) -> str: ...
    def get_price_provider(self) -> str | None: ...
    def get_tools(self, ctx: ToolContext) -> list[Tool]: ...
    def resolve_tools(self) -> list[Tool]: ...
    def get_hooks(self) -> list[Any]: ...
    def on_argument_extras(self, call: ToolCall, extras: BaseModel) -> None: ...
    # What these return is defined above the toolkit (an ``OutputSpec``, ``UsageLimit``s and their dicts).
    def get_output_spec(self, output_type: type[BaseModel] | None = None) -> Any: ...
    def get_usage_limits(self, ctx: ToolContext) -> list[Any]: ...
