"""``manage.py toolcalling_eval PATH``: run a dataset of cases through the site's assistants and real tools,
each case rolled back; print the results, write a report, store the run, exit 1 unless every case passed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolcalling.conf import API_CHOICES
from toolcalling.exceptions import ImproperlyDefined


class Command(BaseCommand):
    help = (
        "Run an eval dataset (YAML, JSON, or the dotted path of a pydantic_evals Dataset) through the real loop "
        "and tools, each case in a transaction that is rolled back. Exits 0 when every case passes, else 1."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="A .yaml/.yml/.json dataset, or module:attribute of a Dataset.")
        parser.add_argument("--assistant", help="The assistant of the cases that name none.")
        parser.add_argument("--model", help="Run the cases' assistants with this model instead of their own.")
        parser.add_argument("--api", choices=API_CHOICES, help="Run the cases' assistants on this model API.")
        parser.add_argument("--repeat", type=int, default=1, help="Run every case N times (pass rates).")
        parser.add_argument("--concurrency", type=int, default=1, help="Cases run at once (SQLite: one at a time).")
        parser.add_argument("--report", action="append", default=[], help="Write FILE.json, .html or .xml (JUnit).")
        parser.add_argument("--no-store", action="store_true", help="Do not store the run for the admin.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            from toolcalling.evals import evaluate, load_dataset
            from toolcalling.evals._reports import REPORT_SUFFIXES, table, write_report
            from toolcalling.evals._store import store_run
        except ImportError as exc:
            raise CommandError(f"Evals need the [evals] extra (pip install 'django-toolcalling[evals]'): {exc}")
        if options["repeat"] < 1 or options["concurrency"] < 1:
            raise CommandError("--repeat and --concurrency must be at least 1.")
        for path in options["report"]:
            if not path.lower().endswith(REPORT_SUFFIXES):
                raise CommandError(f"A report is a {', '.join(REPORT_SUFFIXES)} file, not {path!r}.")
        try:
            dataset = load_dataset(options["path"])
            _, summary = evaluate(
                dataset,
                assistant_id=options["assistant"],
                model=options["model"],
                api=options["api"],
                repeat=options["repeat"],
                concurrency=options["concurrency"],
                progress=options["verbosity"] >= 1 and self.stdout.isatty(),
            )
        except ImproperlyDefined as exc:
            raise CommandError(str(exc))
        self.stdout.write(table(summary))
        for path in options["report"]:
            write_report(summary, path)
            self.stdout.write(f"Report written to {path}")
        if not options["no_store"]:
            run = store_run(summary, dataset=options["path"], assistant_id=options["assistant"] or "",
                            model=options["model"] or "")  # fmt: skip
            self.stdout.write(f"Stored as eval run {run.pk}")
        if not summary.all_passed:
            raise SystemExit(1)
