"""The test site set up in the benchmark's own process: on a private PostgreSQL cluster (else SQLite), Django set
up and migrated, the bench model served, and ``TOOLCALLING`` pointed at it (for the scripts that time turns in
this process: ``cpu_per_turn.py``, ``async_turns.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench._model import model_server
from bench._postgres import postgres


@contextmanager
def site_in_process(var: Path, *, on_postgres: bool, latency: float = 0.0) -> Iterator[str]:
    """The set-up above for the block; the model server's base URL."""
    with ExitStack() as stack:
        if on_postgres:
            stack.enter_context(postgres(var))
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.test import override_settings

        call_command("migrate", verbosity=0)
        base_url = stack.enter_context(model_server(latency=latency))
        toolcalling = {**settings.TOOLCALLING, "BASE_URL": base_url, "API_KEY": "x", "MAX_RETRIES": 0, "MODEL": "m"}
        stack.enter_context(override_settings(TOOLCALLING=toolcalling))
        yield base_url
