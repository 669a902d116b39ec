"""OpenTelemetry spans for turns, model calls and tool calls; a no-op when ``opentelemetry-api`` is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..conf import toolcalling_settings

if TYPE_CHECKING:
    from ..hooks import ModelRequest, TurnView
    from ..model_apis import ModelReply
    from ..models import ToolCall

try:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # the optional [otel] extra is not installed
    trace = None  # type: ignore[assignment]

TRACER_NAME = "toolcalling"


def enabled() -> bool:
    return trace is not None


def _tracer() -> Any:
    """The app's tracer; ``None`` while no tracer provider is set (OpenTelemetry's stand-in for one makes spans
    that record nothing and carry no context). Looked up per span, not cached, so a tracer provider set after
    start-up (as tests do) is used."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        return None
    return provider.get_tracer(TRACER_NAME)


def start(name: str, attributes: dict[str, Any], parent: Any = None) -> Any:
    """Start a span that the caller ends with ``end``; ``None`` without OpenTelemetry or a tracer provider."""
    if trace is None or (tracer := _tracer()) is None:
        return None
    context = trace.set_span_in_context(parent) if parent is not None else None
    return tracer.start_span(name, context=context, attributes=_clean(attributes))


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


# The loop's spans, named and tagged after the OpenTelemetry GenAI conventions (gen_ai.*). -----------------


def start_turn(turn: TurnView) -> Any:
    return start(
        f"invoke_agent {turn.assistant.id}",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": turn.assistant.id,
            "gen_ai.agent.name": turn.assistant.name,
            "gen_ai.conversation.id": str(turn.conversation.pk),
        },
    )


def end_turn(current: Any, turn: TurnView) -> None:
    end(
        current,
        error=turn.conversation.error,
        attributes={
            "toolcalling.status": turn.conversation.status,
            "gen_ai.usage.input_tokens": sum(m.prompt_tokens for m in turn.messages),
            "gen_ai.usage.output_tokens": sum(m.completion_tokens for m in turn.messages),
        },
    )


def model_call(turn: TurnView, request: ModelRequest, parent: Any) -> Any:
    """A context manager: the span of one model call; ``record_reply`` adds what came back."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": request.model,
        "gen_ai.conversation.id": str(turn.conversation.pk),
        "toolcalling.tools_offered": len(request.tools),
    }
    return span(f"chat {request.model}", attributes, parent)


def record_reply(current: Any, reply: ModelReply) -> None:
    if current is None:
        return
    current.set_attributes(
        {
            "gen_ai.response.model": reply.model,
            "gen_ai.response.finish_reasons": [reply.finish_reason or ""],
            "gen_ai.usage.input_tokens": reply.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": reply.usage.completion_tokens,
        }
    )


def start_tool(turn: TurnView, call: ToolCall, parent: Any) -> Any:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.call_id,
        "gen_ai.conversation.id": str(turn.conversation.pk),
    }
    if toolcalling_settings.LOG_PAYLOADS:
        attributes["gen_ai.tool.call.arguments"] = call.raw_arguments
    return start(f"execute_tool {call.name}", attributes, parent)


def end_tool(current: Any, call: ToolCall) -> None:
    result = {"gen_ai.tool.call.result": call.result} if toolcalling_settings.LOG_PAYLOADS else {}
    end(current, error=call.error, attributes={"toolcalling.tool.status": call.status, **result})


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes str, bool, int and float values only; ``None`` means 'not known'."""
    return {k: v if isinstance(v, str | bool | int | float) else str(v) for k, v in attributes.items() if v is not None}
