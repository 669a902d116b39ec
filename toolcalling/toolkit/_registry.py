"""The registries of tools and assistants, filled by ``@tool``, ``Assistant`` subclasses and autodiscovery."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from ..exceptions import AlreadyRegistered, NotRegistered

if TYPE_CHECKING:
    from ._context import AssistantLike
    from ._tool import Tool

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


class ToolRegistry(Registry["Tool"]):
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
