"""``Assistant``: a named set of instructions and tools; subclasses register themselves by ``id``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel

from .conf import API_CHOICES, toolcalling_settings
from .exceptions import ImproperlyDefined
from .hooks import Hook
from .model_apis import load_model_api
from .toolkit import ClientTool, Tool, ToolContext, ToolSource, assistants, check_extras, frontend_tools
from .toolkit import tools as tool_registry
from .usage import UsageLimit, parse_limits

if TYPE_CHECKING:
    from .engine import Listener, OutputSpec, Stepper, TurnResult
    from .models import Conversation, ToolCall

MEMORY_POLICIES = ("full", "final")


class Assistant:
    """Subclass it in an app's ``assistants.py``; class attributes may be overridden by the methods below."""

    id: ClassVar[str | None] = None
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    instructions: ClassVar[str] = "You are a helpful assistant. Use the tools for any data."
    tools: ClassVar[list[Tool | str]] = []
    model: ClassVar[str | None] = None  # None: TOOLCALLING["MODEL"]
    model_options: ClassVar[dict[str, Any]] = {}  # extra request keys of the model API (e.g. temperature)
    api: ClassVar[str | None] = None  # the model API: None: TOOLCALLING["API"] ("chat_completions", "responses")
    hooks: ClassVar[list[Hook]] = []  # hook instances run around this assistant's loop
    permission: ClassVar[str | None] = None  # a Django permission needed to use this assistant at all
    # Memory: "full" sends earlier turns with their tool calls and results, "final" only each question and
    # its final answer. The budgets drop the oldest whole turns; None means no limit.
    memory: ClassVar[str] = "full"
    history_max_messages: ClassVar[int | None] = None
    history_max_tokens: ClassVar[int | None] = None
    # Structured output: a pydantic model the final answer must validate against (or per call, run(output_type=)).
    output_type: ClassVar[type[BaseModel] | None] = None
    output_mode: ClassVar[str | None] = None  # None: TOOLCALLING["OUTPUT_MODE"]
    output_retries: ClassVar[int] = 3  # how often an invalid answer is sent back before the turn fails
    output_strict: ClassVar[bool] = False  # json_schema "strict"; needs a schema that follows its rules
    # Tool search: True, False, or None (on above TOOLCALLING["TOOL_SEARCH_THRESHOLD"] tools).
    tool_search: ClassVar[bool | None] = None
    tool_search_results: ClassVar[int] = 5  # how many matches one search returns (and adds to the offered tools)
    # Extra fields added to every tool's schema (a pydantic model); see on_argument_extras.
    argument_extras: ClassVar[type[BaseModel] | None] = None
    # MCP servers whose tools join this assistant's (``toolcalling.mcp.MCPServer``); listed when a turn starts.
    mcp_servers: ClassVar[list[ToolSource]] = []
    # Tools that run in the browser (``ClientTool``): offered like the others; a call waits for the result the
    # conversation's owner's frontend sends. See get_tools.
    client_tools: ClassVar[list[ClientTool]] = []
    # Whether the tools a frontend sends with its request (AG-UI's ``tools``: CopilotKit's actions) are offered as
    # client tools too; never under the name of a tool of the site's.
    accept_frontend_tools: ClassVar[bool] = False
    # Usage limits of this assistant's turns, on top of TOOLCALLING["USAGE_LIMITS"]; see get_usage_limits.
    usage_limits: ClassVar[list[dict[str, Any] | UsageLimit]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("id") is None:
            return  # an abstract base for other assistants
        problems = []
        if not isinstance(cls.id, str) or not cls.id:
            problems.append("id must be a non-empty string")
        elif not cls.name:
            cls.name = cls.id.replace("_", " ").replace("-", " ").capitalize()
        if not isinstance(cls.tools, list | tuple):
            problems.append("tools must be a list of tools or tool names")
        if not isinstance(cls.mcp_servers, list | tuple) or not all(isinstance(s, ToolSource) for s in cls.mcp_servers):
            problems.append("mcp_servers must be a list of MCPServer objects (from toolcalling.mcp)")
        if not isinstance(cls.client_tools, list | tuple) or not all(
            isinstance(t, ClientTool) for t in cls.client_tools
        ):
            problems.append("client_tools must be a list of ClientTool objects")
        else:
            client_names = [t.name for t in cls.client_tools]
            declared = cls.tools if isinstance(cls.tools, list | tuple) else []
            names = client_names + [t.name if isinstance(t, Tool) else t for t in declared]
            clashing = sorted({n for n in client_names if names.count(n) > 1})
            if clashing:
                problems.append(f"a client tool has the name of another tool ({', '.join(clashing)})")
        if cls.api is not None and cls.api not in API_CHOICES:
            problems.append(f"api must be None or one of {', '.join(map(repr, API_CHOICES))}, not {cls.api!r}")
        if problems:
            raise ImproperlyDefined(f"Assistant {cls.__qualname__!r} cannot be used: " + "; ".join(problems) + ".")
        if cls.memory not in MEMORY_POLICIES:
            raise ImproperlyDefined(f"Assistant {cls.__qualname__!r}: memory must be one of {MEMORY_POLICIES}.")
        parse_limits(cls.usage_limits, f"Assistant {cls.__qualname__!r}: usage_limits")
        # Tools named by string may not be registered yet; the turn checks those when it starts.
        check_extras(cls.argument_extras, [t for t in cls.tools if isinstance(t, Tool)], cls.__qualname__)
        assistants.register(cls)

    @classmethod
    def get(cls, assistant_id: str) -> Assistant:
        """An instance of the assistant registered under ``assistant_id``."""
        # Only subclasses of this class register themselves (``__init_subclass__``).
        return cast("Assistant", assistants.get(assistant_id)())

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
        return self.model or toolcalling_settings.MODEL

    def get_api(self) -> str:
        """The model API this assistant's turns speak: ``api``, else ``TOOLCALLING["API"]``."""
        return self.api or toolcalling_settings.API

    def get_price_provider(self) -> str | None:
        """The genai-prices provider that prices this assistant's answers when ``BASE_URL`` is not set: the one
        its model API names (``ModelAPI.price_provider``)."""
        return load_model_api(self.get_api()).price_provider

    def get_tools(self, ctx: ToolContext) -> list[Tool]:
        """The tools offered to the model for this user: the declared ones the user has permissions for, then
        the tools of ``mcp_servers`` (asked for now, not at start-up; a name already taken is never reused), then
        the ``client_tools``, and with ``accept_frontend_tools`` the tools the conversation's frontend sent last
        (never one named like a tool before them)."""
        offered = [t for t in self.resolve_tools() if t.user_may_use(ctx.user)]
        taken = {t.name for t in offered}
        for source in self.mcp_servers:
            found = [t for t in source.get_tools(ctx, frozenset(taken)) if t.user_may_use(ctx.user)]
            offered += found
            taken.update(t.name for t in found)
        sent = frontend_tools(ctx.conversation) if self.accept_frontend_tools else []
        for client in [*self.client_tools, *sent]:
            if client.name not in taken and client.user_may_use(ctx.user):
                offered.append(client)
                taken.add(client.name)
        return offered

    def get_usage_limits(self, ctx: ToolContext) -> list[dict[str, Any] | UsageLimit]:
        """The limits of this user's turns with this assistant, on top of ``TOOLCALLING["USAGE_LIMITS"]``
        (which always apply). Override for per-user policy, e.g. more tokens for paying customers."""
        return list(self.usage_limits)

    def get_hooks(self) -> list[Hook]:
        return [*toolcalling_settings.HOOKS, *self.hooks]

    def get_output_spec(self, output_type: type[BaseModel] | None = None) -> OutputSpec | None:
        """How the final answer is asked for and checked; ``None`` for plain text answers."""
        from .engine import OutputSpec

        chosen = output_type or self.output_type
        if chosen is None:
            return None
        return OutputSpec(
            output_type=chosen,
            mode=self.output_mode or toolcalling_settings.OUTPUT_MODE,
            retries=self.output_retries,
            strict=self.output_strict,
        )

    def on_argument_extras(self, call: ToolCall, extras: BaseModel) -> None:
        """Receives the ``argument_extras`` the model filled for a call, before the tool runs.

        They are stored on ``call.extras`` too (saved with the call's result); override to act on them."""

    # Running outside a request ------------------------------------------------------------------------

    def run(
        self,
        user: Any,
        content: str,
        conversation: Conversation | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        listeners: list[Listener] | None = None,
        attachments: Sequence[Any] = (),
    ) -> TurnResult:
        """Run one turn from a shell, a management command or a task; a new conversation when none is given.
        ``attachments``: the user's own uploads not sent yet (``Attachment`` rows or ids) that the message carries."""
        from .engine import run_turn

        return run_turn(
            self, user, content, conversation, output_type=output_type, listeners=listeners, attachments=attachments
        )

    async def arun(
        self,
        user: Any,
        content: str,
        conversation: Conversation | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        listeners: list[Listener] | None = None,
        attachments: Sequence[Any] = (),
    ) -> TurnResult:
        """``run`` for async code (an async view, a task on an event loop): the same turn, whose wait for the
        model holds no thread (the SDK's async client of each model API, streamed or not; a client that
        ``CLIENT_FACTORY`` builds waits in a thread). Tools stay plain functions, run off the event loop in the
        loop's executor with the turn's writes."""
        from .engine import arun_turn

        return await arun_turn(
            self, user, content, conversation, output_type=output_type, listeners=listeners, attachments=attachments
        )

    def steps(
        self,
        user: Any,
        content: str,
        conversation: Conversation | None = None,
        *,
        output_type: type[BaseModel] | None = None,
        listeners: list[Listener] | None = None,
        attachments: Sequence[Any] = (),
    ) -> Stepper:
        """Drive a turn one model answer at a time, deciding each requested call yourself (the arguments are
        ``run``'s)."""
        from .engine import Stepper

        return Stepper(
            self, user, content, conversation, output_type=output_type, listeners=listeners, attachments=attachments
        )

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
