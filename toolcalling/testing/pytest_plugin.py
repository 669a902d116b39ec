"""The pytest plugin of ``toolcalling.testing`` (loaded through the ``pytest11`` entry point): the
``toolcalling_replay`` fixture makes a recorded conversation the model of a test in one line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from .replay import ReplayModel
from .server import OpenAICompatibleServer


@pytest.fixture
def toolcalling_replay() -> Iterator[Callable[..., ReplayModel]]:
    """``replay = toolcalling_replay("replays/status.json")`` serves the recording on a strict local server
    and points ``TOOLCALLING`` at it for the test; at teardown the test fails if a request differed from the
    recording or a recorded reply was not asked for."""
    with ExitStack() as stack:
        models: list[ReplayModel] = []

        def start(path: str | Path, **options: Any) -> ReplayModel:
            model = ReplayModel(path, **options)
            server = stack.enter_context(OpenAICompatibleServer(model))
            merged = {**getattr(settings, "TOOLCALLING", {}), "BASE_URL": server.base_url, "API_KEY": "replay",
                      "MAX_RETRIES": 0, "OFFLINE_MODEL": False, "MODEL": model.model_name}  # fmt: skip
            stack.enter_context(override_settings(TOOLCALLING=merged))
            models.append(model)
            return model

        yield start
        for model in models:
            model.assert_done()
