"""MCP tests use the official SDK on both sides: its client against the live test site, and MCP servers built
with it, run as subprocesses, used by assistants through the strict model server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcalling import Assistant
from toolcalling.toolkit import assistants

from .helpers import CalcServer


@pytest.fixture(autouse=True)
def no_cached_listings(fresh_cache: None) -> None:
    """Tool listings are cached in Django's cache; every test starts without them."""


@pytest.fixture
def make_assistant() -> Iterator[Callable[..., type[Assistant]]]:
    """Define an assistant for one test (registered by subclassing), removed afterwards."""
    made: list[str] = []

    def make(**attributes: Any) -> type[Assistant]:
        cls = type(f"Test{len(made)}Assistant", (Assistant,), {"__module__": __name__, **attributes})
        made.append(attributes["id"])
        return cls

    yield make
    for assistant_id in made:
        assistants.unregister(assistant_id)


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CalcServer]:
    """The calc server for a module's tests (starting one takes seconds)."""
    server = CalcServer(tmp_path_factory.mktemp("calc"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_calc(tmp_path: Path) -> Iterator[CalcServer]:
    """A calc server of one test's own, which the test may stop."""
    server = CalcServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
