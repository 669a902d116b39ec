"""Writing an eval's results for people and for CI: a table for the terminal, and JSON, HTML or JUnit XML files."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from django.utils.html import escape

from ..exceptions import ImproperlyDefined
from ._outcomes import RunSummary

REPORT_SUFFIXES = (".json", ".html", ".xml")

COLUMNS = ("case", "passed", "score", "tool calls", "tokens", "cost", "time")


def table(summary: RunSummary) -> str:
    """The results as a plain-text table, then the pass rate (per case too when cases ran more than once)."""
    rows = [
        (o.name, "yes" if o.passed else "NO", f"{o.score:.2f}", ", ".join(o.tool_calls) or "-", str(o.tokens),
         o.cost or "-", f"{o.seconds:.2f}s")
        for o in summary.outcomes
    ]  # fmt: skip
    widths = [max(len(cell) for cell in column) for column in zip(COLUMNS, *rows, strict=False)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in [COLUMNS, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    for outcome in summary.outcomes:
        lines += [f"{outcome.name}: {failure}" for failure in outcome.failures]
    lines.append(f"{summary.passed}/{len(summary.outcomes)} passed ({summary.pass_rate:.0%})")
    rates = summary.case_pass_rates()
    if any(runs > 1 for _, runs in rates.values()):
        lines += [f"  {case}: {passed}/{runs} ({passed / runs:.0%})" for case, (passed, runs) in rates.items()]
    return "\n".join(lines)


def write_report(summary: RunSummary, path: str) -> None:
    """Write ``summary`` to ``path`` as JSON, HTML or JUnit XML, by its suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        text = json.dumps(summary.as_dict(), indent=2, ensure_ascii=False)
    elif suffix == ".html":
        text = html(summary)
    elif suffix == ".xml":
        text = junit_xml(summary)
    else:
        raise ImproperlyDefined(f"A report is a {', '.join(REPORT_SUFFIXES)} file, not {path!r}.")
    Path(path).write_text(text + "\n", encoding="utf-8")


def html(summary: RunSummary) -> str:
    """A self-contained HTML page of the results."""
    head = "".join(f"<th>{escape(c)}</th>" for c in (*COLUMNS, "failures"))
    body = []
    for o in summary.outcomes:
        cells = (o.name, "yes" if o.passed else "no", f"{o.score:.2f}", ", ".join(o.tool_calls), str(o.tokens),
                 o.cost or "", f"{o.seconds:.2f}s")  # fmt: skip
        failures = "<br>".join(escape(f) for f in o.failures)
        row = "".join(f"<td>{escape(c)}</td>" for c in cells)
        body.append(f'<tr class="{"passed" if o.passed else "failed"}">{row}<td>{failures}</td></tr>')
    title = escape(f"{summary.name}: {summary.passed}/{len(summary.outcomes)} passed ({summary.pass_rate:.0%})")
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title><style>'
        "body{font-family:sans-serif}td,th{padding:.2em .6em;text-align:left;vertical-align:top}"
        ".failed{background:#fdd}.passed{background:#dfd}</style></head>"
        f"<body><h1>{title}</h1><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        "</body></html>"
    )


def junit_xml(summary: RunSummary) -> str:
    """JUnit XML, one ``testcase`` per case run, as CI systems show test results."""
    failed = len(summary.outcomes) - summary.passed
    seconds = sum(o.seconds for o in summary.outcomes)
    suite = ElementTree.Element(
        "testsuite", name=summary.name, tests=str(len(summary.outcomes)), failures=str(failed), errors="0",
        time=f"{seconds:.3f}",
    )  # fmt: skip
    for o in summary.outcomes:
        case = ElementTree.SubElement(suite, "testcase", classname=summary.name, name=o.name, time=f"{o.seconds:.3f}")
        if not o.passed:
            failure = ElementTree.SubElement(case, "failure", message=o.failures[0] if o.failures else "failed")
            failure.text = "\n".join(o.failures)
        ElementTree.SubElement(case, "system-out").text = o.reply
    suites = ElementTree.Element("testsuites", tests=suite.get("tests", "0"), failures=str(failed))
    suites.append(suite)
    return ElementTree.tostring(suites, encoding="unicode", xml_declaration=True)
