"""Fixtures of the loop feature tests: their assistants, and a check that every request was valid."""

from collections.abc import Iterator

import pytest

from toolcalling.testing import ScriptedModel

from . import assistants  # noqa: F401  (registers the assistants)


@pytest.fixture
def strict_model(model: ScriptedModel) -> Iterator[ScriptedModel]:
    """The ``model`` fixture, plus a check at the end that the strict server refused nothing."""
    yield model
    assert not model.rejected, [r.errors for r in model.rejected]
    assert not model.unexpected, "a request arrived with no reply queued"
