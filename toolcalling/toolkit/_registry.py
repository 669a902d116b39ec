"""The registries of tools and assistants, and ``@tool``, which makes a function a tool and registers it;
``Assistant`` subclasses register themselves, and autodiscovery imports the modules that define both."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from ..exceptions import AlreadyRegistered, NotRegistered
from ._tool import ApprovalPreview, ApprovalRule, Tool, humanise, make_tool

if TYPE_CHECKING:
    from ._assistant import AssistantLike

T = TypeVar("T")


class Registry(Generic[T]):
    """Named things with ``register`` / ``unregister`` / ``is_registered`` / ``get``, like ``admin.site``."""

    kind = "item"

    def __init__(self) -> None:
        self._registry: dict[str, T] = {}

    def _name(self, item: T) -> str:
        raise NotImplementedError

    def _origin(self, item: T) -> str:
        raise NotImplementedError

    def register(self, item: T) -> T:
        name = self._name(item)
        existing = self._registry.get(name)
        if existing is not None and existing is not item:
            if self._origin(existing) == self._origin(item):
                # The same definition imported again (a module reloaded): keep the newer one.
                self._registry[name] = item
                return item
            raise AlreadyRegistered(
                f"Two {self.kind}s are named {name!r}: {self._origin(existing)} and {self._origin(item)}. "
                f"Give one of them another name."
            )
        self._registry[name] = item
        return item

    def unregister(self, name: str) -> None:
        if name not in self._registry:
            raise NotRegistered(f"No {self.kind} named {name!r} is registered.")
        del self._registry[name]

    def is_registered(self, name: str) -> bool:
        return name in self._registry

    def get(self, name: str) -> T:
        try:
            return self._registry[name]
        except KeyError:
            known = ", ".join(sorted(self._registry)) or "none"
            raise NotRegistered(f"No {self.kind} named {name!r} is registered (registered: {known}).") from None

    def all(self) -> list[T]:
        return [self._registry[name] for name in sorted(self._registry)]


class ToolRegistry(Registry[Tool]):
    kind = "tool"

    def _name(self, item: Tool) -> str:
        return item.name

    def _origin(self, item: Tool) -> str:
        return item.module


class AssistantRegistry(Registry["type[AssistantLike]"]):
    kind = "assistant"

    def _name(self, item: type[AssistantLike]) -> str:
        return str(item.id)

    def _origin(self, item: type[AssistantLike]) -> str:
        return f"{item.__module__}.{item.__qualname__}"


tools = ToolRegistry()
assistants = AssistantRegistry()


@overload
def tool(function: Callable[..., Any]) -> Tool: ...
@overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    requires_approval: ApprovalRule = False,
    approval_preview: ApprovalPreview | None = None,
    approver: str = "staff",
    return_direct: bool = False,
    permissions: Sequence[str] = (),
    idempotent: bool = False,
    atomic: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    requires_approval: ApprovalRule = False,
    approval_preview: ApprovalPreview | None = None,
    approver: str = "staff",
    return_direct: bool = False,
    permissions: Sequence[str] = (),
    idempotent: bool = False,
    atomic: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool and register it; use bare (``@tool``) or with options (``@tool(...)``)."""

    def decorator(func: Callable[..., Any]) -> Tool:
        made = make_tool(
            func,
            name=name,
            description=description,
            label=label,
            requires_approval=requires_approval,
            approval_preview=approval_preview,
            approver=approver,
            return_direct=return_direct,
            permissions=permissions,
            idempotent=idempotent,
            atomic=atomic,
        )
        tools.register(made)
        return made

    return decorator(function) if function is not None else decorator


def tool_label(name: str) -> str:
    """What end users see for the tool called ``name``: its label, or the name humanised when no such tool is
    registered (any more), so a stored call always has something readable to show."""
    if tools.is_registered(name):
        return str(tools.get(name).label)
    return humanise(name)
