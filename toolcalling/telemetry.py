"""OpenTelemetry spans for turns, model calls and tool calls; a no-op when ``opentelemetry-api`` is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # the optional [otel] extra is not installed
    trace = None  # type: ignore[assignment]

TRACER_NAME = "toolcalling"


def enabled() -> bool:
    return trace is not None


def _tracer() -> Any:
    # Looked up per span, not cached, so a tracer provider set after start-up (as tests do) is used.
    return trace.get_tracer(TRACER_NAME)


def start(name: str, attributes: dict[str, Any], parent: Any = None) -> Any:
    """Start a span that the caller ends with ``end``; ``None`` without OpenTelemetry."""
    if trace is None:
        return None
    context = trace.set_span_in_context(parent) if parent is not None else None
    return _tracer().start_span(name, context=context, attributes=_clean(attributes))


def end(span: Any, *, error: str = "", attributes: dict[str, Any] | None = None) -> None:
    if span is None:
        return
    if attributes:
        span.set_attributes(_clean(attributes))
    if error:
        span.set_status(Status(StatusCode.ERROR, error))
        span.set_attribute("error.type", error.split(":", 1)[0][:100])
    span.end()


@contextmanager
def span(name: str, attributes: dict[str, Any], parent: Any = None) -> Iterator[Any]:
    """A span around a block; an exception marks it as an error and is raised on."""
    current = start(name, attributes, parent)
    try:
        yield current
    except BaseException as exc:
        end(current, error=f"{type(exc).__name__}: {exc}")
        raise
    else:
        end(current)


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes str, bool, int and float values only; ``None`` means 'not known'."""
    return {k: v if isinstance(v, str | bool | int | float) else str(v) for k, v in attributes.items() if v is not None}
