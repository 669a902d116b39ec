"""``Assistant``: a named set of instructions and tools; subclasses register themselves by ``id``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .context import ToolContext
from .definitions import Tool
from .exceptions import ImproperlyDefined
from .registry import assistants
from .registry import tools as tool_registry

if TYPE_CHECKING:
    from .models import Conversation


class Assistant:
    """Subclass it in an app's ``assistants.py``; class attributes may be overridden by the methods below."""

    id: ClassVar[str | None] = None
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    instructions: ClassVar[str] = "You are a helpful assistant. Use the tools for any data."
    tools: ClassVar[list[Tool | str]] = []
    model: ClassVar[str | None] = None  # None: TOOLCALLING["MODEL"]
    model_options: ClassVar[dict[str, Any]] = {}  # extra chat.completions.create keyword arguments
    hooks: ClassVar[list[Any]] = []  # hook instances run around this assistant's loop
    permission: ClassVar[str | None] = None  # a Django permission needed to use this assistant at all

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("id") is None:
            return  # an abstract base for other assistants
        problems = []
        if not isinstance(cls.id, str) or not cls.id:
            problems.append("id must be a non-empty string")
        if not isinstance(cls.tools, list | tuple):
            problems.append("tools must be a list of tools or tool names")
        if problems:
            raise ImproperlyDefined(f"Assistant {cls.__qualname__!r} cannot be used: " + "; ".join(problems) + ".")
        if not cls.name:
            cls.name = cls.id.replace("_", " ").replace("-", " ").capitalize()
        assistants.register(cls)

    @classmethod
    def get(cls, assistant_id: str) -> Assistant:
        """An instance of the assistant registered under ``assistant_id``."""
        return assistants.get(assistant_id)()

    # Policy hooks ---------------------------------------------------------------------------------

    def has_permission(self, user: Any) -> bool:
        """Whether ``user`` may talk to this assistant (default: authenticated, plus ``permission``)."""
        if user is None or not getattr(user, "is_authenticated", False):
            return False
        return self.permission is None or user.has_perm(self.permission)

    def get_instructions(self, ctx: ToolContext) -> str:
        """The system message for this turn."""
        return self.instructions

    def get_context_extra(self, user: Any, conversation: Conversation | None) -> dict[str, Any]:
        """What the site adds to every ``ToolContext.extra`` (e.g. a tenant id); never seen by the model."""
        return {}

    def get_model(self) -> str:
        from .conf import toolcalling_settings

        return self.model or toolcalling_settings.MODEL

    def get_tools(self, ctx: ToolContext) -> list[Tool]:
        """The tools offered to the model for this user: the declared ones the user has permissions for."""
        return [t for t in self.resolve_tools() if t.user_may_use(ctx.user)]

    def get_hooks(self) -> list[Any]:
        from .conf import toolcalling_settings

        return [*toolcalling_settings.HOOKS, *self.hooks]

    # Helpers --------------------------------------------------------------------------------------

    def resolve_tools(self) -> list[Tool]:
        """The declared tools as ``Tool`` objects (names looked up in the registry)."""
        return [item if isinstance(item, Tool) else tool_registry.get(item) for item in self.tools]

    def build_context(self, user: Any, conversation: Conversation | None = None) -> ToolContext:
        """A fresh ``ToolContext`` from server-side facts only."""
        return ToolContext(
            user=user,
            conversation=conversation,
            assistant=self,
            extra=dict(self.get_context_extra(user, conversation)),
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r}>"
