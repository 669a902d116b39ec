"""Observability: call outcomes and durations, token usage, signals, OpenTelemetry spans and the admin statistics."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcalling import Assistant, signals
from toolcalling.engine import _telemetry as telemetry
from toolcalling.models import ToolCall


@pytest.fixture(scope="session")
def span_exporter():
    # The global provider can be set once per process (a second session in it, as a mutation run makes, finds
    # the first one's), so the exporter joins the provider in place; every test clears the exporter.
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def spans(span_exporter):
    span_exporter.clear()
    return span_exporter


def run_add_and_explode(model, user):
    model.calls(("add", {"a": 20, "b": 22}), ("explode", {}), usage=(30, 10))
    model.reply("42, and one tool failed.", usage=(50, 8))
    return Assistant.get("helper").run(user, "add")


def test_each_call_stores_outcome_error_and_duration(strict_model, alice):
    result = run_add_and_explode(strict_model, alice)
    add, explode = ToolCall.objects.filter(conversation=result.conversation).order_by("index")
    assert (add.status, add.error, add.result) == (ToolCall.Status.SUCCEEDED, "", "42")
    assert (explode.status, explode.error) == (ToolCall.Status.FAILED, "RuntimeError: boom")
    for call in (add, explode):
        assert call.duration_ms is not None and call.duration_ms >= 0
        assert call.started_at <= call.finished_at


def test_token_usage_is_stored_per_message_and_summed_per_conversation(strict_model, alice):
    result = run_add_and_explode(strict_model, alice)
    answers = [m for m in result.messages if m.role == "assistant"]
    assert [(m.prompt_tokens, m.completion_tokens, m.total_tokens) for m in answers] == [(30, 10, 40), (50, 8, 58)]
    conversation = type(result.conversation).objects.get(pk=result.conversation.pk)
    assert (conversation.prompt_tokens, conversation.completion_tokens, conversation.total_tokens) == (80, 18, 98)


@pytest.mark.chat_completions
def test_signals_fire_around_model_and_tool_calls(strict_model, alice):
    seen = []

    def receiver(signal_name):
        def handle(sender, **kwargs):
            seen.append((signal_name, sender, kwargs))

        return handle

    receivers = {
        name: receiver(name)
        for name in (
            "model_call_started",
            "model_call_finished",
            "tool_call_started",
            "tool_call_finished",
            "turn_finished",
        )
    }
    for name, handler in receivers.items():
        getattr(signals, name).connect(handler)
    try:
        result = run_add_and_explode(strict_model, alice)
    finally:
        for name, handler in receivers.items():
            getattr(signals, name).disconnect(handler)

    names = [name for name, _, _ in seen]
    assert names == [
        "model_call_started",
        "model_call_finished",
        "tool_call_started",
        "tool_call_finished",
        "tool_call_started",
        "tool_call_finished",
        "model_call_started",
        "model_call_finished",
        "turn_finished",
    ]
    assert all(sender is type(Assistant.get("helper")) for _, sender, _ in seen)
    started, finished = seen[0][2], seen[1][2]
    assert started["request"].model == "test-model" and started["turn"].conversation == result.conversation
    assert finished["reply"].usage.total_tokens == 40 and finished["duration_ms"] >= 0
    tool_finished = seen[5][2]["tool_call"]
    assert (tool_finished.name, tool_finished.status, tool_finished.error) == (
        "explode",
        "failed",
        "RuntimeError: boom",
    )
    assert [m.pk for m in seen[-1][2]["messages"]] == [m.pk for m in result.messages]


@pytest.mark.chat_completions
def test_spans_for_the_turn_each_model_call_and_each_tool_call(strict_model, alice, spans):
    result = run_add_and_explode(strict_model, alice)
    finished = spans.get_finished_spans()
    by_name = {s.name: s for s in finished}
    assert sorted(s.name for s in finished) == sorted(
        ["invoke_agent helper", "chat test-model", "chat test-model", "execute_tool add", "execute_tool explode"]
    )
    turn = by_name["invoke_agent helper"]
    assert turn.parent is None
    assert all(s.parent.span_id == turn.context.span_id for s in finished if s is not turn)
    assert turn.attributes["gen_ai.conversation.id"] == str(result.conversation.pk)
    assert turn.attributes["gen_ai.usage.input_tokens"] == 80
    chat = next(s for s in finished if s.name == "chat test-model")
    assert chat.attributes["gen_ai.request.model"] == "test-model"
    assert chat.attributes["gen_ai.usage.output_tokens"] == 10
    explode = by_name["execute_tool explode"]
    assert explode.attributes["gen_ai.tool.name"] == "explode"
    assert explode.status.status_code == trace.StatusCode.ERROR
    assert explode.attributes["error.type"] == "RuntimeError"
    add = by_name["execute_tool add"]
    assert add.attributes["toolcalling.tool.status"] == "succeeded"
    for span in finished:
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.tool.call.result" not in span.attributes


def test_spans_carry_payloads_only_with_log_payloads(strict_model, alice, spans, settings):
    settings.TOOLCALLING = {**settings.TOOLCALLING, "LOG_PAYLOADS": True}
    run_add_and_explode(strict_model, alice)
    add = next(s for s in spans.get_finished_spans() if s.name == "execute_tool add")
    assert add.attributes["gen_ai.tool.call.arguments"] == '{"a": 20, "b": 22}'
    assert add.attributes["gen_ai.tool.call.result"] == "42"


def test_a_failed_turn_marks_its_span_as_an_error(strict_model, alice, spans):
    strict_model.error(500, "upstream broke")
    with pytest.raises(Exception, match="upstream broke"):
        Assistant.get("helper").run(alice, "hi")
    turn = next(s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert turn.status.status_code == trace.StatusCode.ERROR
    assert turn.attributes["toolcalling.status"] == "failed"


def test_without_opentelemetry_the_loop_runs_and_makes_no_spans(strict_model, alice, spans, monkeypatch):
    monkeypatch.setattr(telemetry, "trace", None)
    assert not telemetry.enabled()
    result = run_add_and_explode(strict_model, alice)
    assert result.reply == "42, and one tool failed."
    assert spans.get_finished_spans() == ()


def test_with_no_tracer_provider_set_the_loop_starts_no_span_and_uses_one_set_later(
    strict_model, alice, spans, monkeypatch
):
    provider = trace.get_tracer_provider()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)  # a site that installed OpenTelemetry, set none
    assert telemetry.start("chat m", {"gen_ai.operation.name": "chat"}) is None
    assert run_add_and_explode(strict_model, alice).reply == "42, and one tool failed."
    assert spans.get_finished_spans() == ()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)  # set after start-up
    run_add_and_explode(strict_model, alice)
    assert {s.name.split()[0] for s in spans.get_finished_spans()} == {"invoke_agent", "chat", "execute_tool"}


def test_admin_shows_calls_failure_rate_and_mean_duration_per_tool_from_one_query(strict_model, alice, admin_client):
    run_add_and_explode(strict_model, alice)
    run_add_and_explode(strict_model, alice)
    ToolCall.objects.filter(name="add").update(duration_ms=10)
    ToolCall.objects.filter(name="explode").update(duration_ms=30)

    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get("/admin/toolcalling/toolcall/stats/")
    assert response.status_code == 200
    # One aggregate query; the admin's sidebar also counts the calls waiting for staff, once per page.
    touching = [q["sql"] for q in queries if "toolcalling_toolcall" in q["sql"]]
    assert len([sql for sql in touching if "GROUP BY" in sql]) == 1 and len(touching) == 2
    rows = {row["name"]: row for row in response.context["rows"]}
    assert (rows["add"]["calls"], rows["add"]["failure_rate"], rows["add"]["mean_duration_ms"]) == (2, 0.0, 10.0)
    assert (rows["explode"]["calls"], rows["explode"]["failure_rate"], rows["explode"]["mean_duration_ms"]) == (
        2,
        1.0,
        30.0,
    )
    html = response.content.decode()
    assert "100&nbsp;%" in html and "30.0&nbsp;ms" in html
    changelist = admin_client.get("/admin/toolcalling/toolcall/")
    assert b"/admin/toolcalling/toolcall/stats/" in changelist.content


def test_the_statistics_need_view_permission(client, alice):
    client.force_login(alice)
    response = client.get("/admin/toolcalling/toolcall/stats/")
    assert response.status_code in (302, 403)
