"""Evaluating a whole dataset: every case (``repeat`` times) through ``run_case``, scored by its evaluators."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial
from typing import Any

from django.conf import settings
from django.core import mail
from django.test.utils import override_settings
from pydantic_evals.reporting import EvaluationReport

from ..exceptions import ImproperlyDefined
from ._cases import EvalInputs, Transcript
from ._datasets import EvalDataset
from ._outcomes import RunSummary, summarise
from ._running import assistant_overrides, run_case

LOCMEM = "django.core.mail.backends.locmem.EmailBackend"


def mail_in_memory() -> override_settings:
    """Every mailer of the site sends to ``django.core.mail.outbox``, as Django's test runner arranges it.

    From Django 6.1 on, mail goes through ``MAILERS`` (``EMAIL_BACKEND`` is deprecated and ignored when a site has
    ``MAILERS``): each of the site's aliases, or ``default`` on a site that has not moved yet. Before 6.1 there is
    only ``EMAIL_BACKEND``."""
    if hasattr(mail, "mailers"):
        aliases = settings.MAILERS if hasattr(settings, "MAILERS") else ["default"]
        return override_settings(MAILERS={alias: {"BACKEND": LOCMEM} for alias in aliases})
    return override_settings(EMAIL_BACKEND=LOCMEM)


def evaluate(
    dataset: EvalDataset,
    *,
    assistant_id: str | None = None,
    model: str | None = None,
    api: str | None = None,
    repeat: int = 1,
    concurrency: int = 1,
    progress: bool = False,
) -> tuple[EvaluationReport[EvalInputs, Transcript, Any], RunSummary]:
    """Run ``dataset`` and return pydantic-evals' report with its summary (one row per case run).

    ``model`` and ``api`` replace those of every assistant the cases name while it runs. Mail the site sends
    meanwhile (e.g. staff told of a waiting call) stays in memory: the calls it is about are rolled back."""
    unnamed = [str(case.name) for case in dataset.cases if not (case.inputs.assistant or assistant_id)]
    if unnamed:
        raise ImproperlyDefined(f"The cases {', '.join(unnamed)} name no assistant: give one in each or --assistant.")
    with ExitStack() as stack:
        stack.enter_context(mail_in_memory())
        if model is not None or api is not None:
            named = {case.inputs.assistant or assistant_id for case in dataset.cases}
            for chosen in sorted(n for n in named if n):
                stack.enter_context(assistant_overrides(chosen, model=model, api=api))
        run = partial(
            dataset.evaluate_sync,
            partial(run_case, assistant_id=assistant_id),
            name=dataset.name or "eval",
            task_name="toolcalling",
            max_concurrency=concurrency,
            progress=progress,
            repeat=repeat,
        )
        # pydantic-evals runs an event loop of its own, which it cannot do in a thread whose loop is running
        # (a notebook, Playwright's sync API in a test): it gets a thread of its own.
        with ThreadPoolExecutor(1, thread_name_prefix="toolcalling-eval") as pool:
            report = pool.submit(run).result()
    return report, summarise(report)
