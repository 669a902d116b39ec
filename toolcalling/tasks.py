"""Celery tasks of the app, found by the site's ``app.autodiscover_tasks()``."""

from __future__ import annotations

from celery import shared_task

# Background turns (bodies in streaming.py) ------------------------------------------------------


@shared_task(name="toolcalling.run_turn", ignore_result=True)
def run_turn(conversation_id: str, content: str) -> None:
    """Run a turn whose user message was posted with ``"background": true``; its events go to the
    conversation's event stream."""
    from .streaming import run_background_turn

    run_background_turn(conversation_id, content)
