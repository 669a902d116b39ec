"""Tool argument extras: asked for in every schema, stored and handed over, removed before the tool runs."""

import pytest
from pydantic import BaseModel

from toolcalling import Assistant
from toolcalling.exceptions import ImproperlyDefined
from toolcalling.models import ToolCall

from .assistants import ExtrasAssistant, Why


@pytest.fixture(autouse=True)
def clear_seen():
    ExtrasAssistant.seen.clear()


def test_every_tool_schema_asks_for_the_extras(strict_model, alice):
    strict_model.reply("hi")
    Assistant.get("lf_extras").run(alice, "hi")
    for definition in strict_model.tool_definitions(0).values():
        params = definition["parameters"]
        assert {"reasoning", "confidence"} <= set(params["properties"])
        assert {"reasoning", "confidence"} <= set(params["required"])
    add = strict_model.tool_definitions(0)["add"]
    assert add["parameters"]["required"] == ["a", "b", "reasoning", "confidence"]


def test_extras_are_stored_handed_over_and_removed_before_the_tool_runs(strict_model, alice):
    strict_model.call("add", {"a": 2, "b": 3, "reasoning": "the user asked for a sum", "confidence": 0.8})
    strict_model.reply("5")
    result = Assistant.get("lf_extras").run(alice, "2+3?")

    call = ToolCall.objects.get(conversation=result.conversation)
    assert call.status == ToolCall.Status.SUCCEEDED
    assert call.result == "5"
    assert call.arguments == {"a": 2, "b": 3}
    assert call.extras == {"reasoning": "the user asked for a sum", "confidence": 0.8}
    assert ExtrasAssistant.seen == [("add", Why(reasoning="the user asked for a sum", confidence=0.8))]


def test_missing_or_invalid_extras_go_back_to_the_model_like_invalid_arguments(strict_model, alice):
    strict_model.call("add", {"a": 2, "b": 3, "confidence": 3})
    strict_model.reply("sorry")
    result = Assistant.get("lf_extras").run(alice, "2+3?")

    call = ToolCall.objects.get(conversation=result.conversation)
    assert call.status == ToolCall.Status.FAILED
    assert call.result.startswith("Error: invalid arguments for add: reasoning: Field required; confidence:")
    assert ExtrasAssistant.seen == []
    assert strict_model.messages(1)[-1]["content"] == call.result


def test_extras_on_a_gated_call_are_stored_while_it_waits(strict_model, alice):
    strict_model.call("delete_everything", {"confirm": "yes", "reasoning": "asked to", "confidence": 1})
    result = Assistant.get("lf_extras").run(alice, "delete it all")
    call = ToolCall.objects.get(conversation=result.conversation)
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    assert (call.arguments, call.extras) == ({"confirm": "yes"}, {"reasoning": "asked to", "confidence": 1.0})


class Clashing(BaseModel):
    a: str


def test_a_name_collision_with_a_tool_parameter_is_a_definition_error():
    from tests.testapp.tools import add

    with pytest.raises(ImproperlyDefined, match=r"fields named like tool parameters: add\.a"):

        class Bad(Assistant):
            id = "lf_bad_extras"
            tools = [add]
            argument_extras = Clashing


def test_a_collision_with_a_tool_named_by_string_is_caught_when_the_turn_starts(strict_model, alice, monkeypatch):
    monkeypatch.setattr(ExtrasAssistant, "argument_extras", Clashing)
    with pytest.raises(ImproperlyDefined, match=r"add\.a"):
        Assistant.get("lf_extras").run(alice, "hi")


def test_the_system_check_reports_a_collision_with_a_tool_named_by_string(monkeypatch):
    from toolcalling.checks import check_assistants

    monkeypatch.setattr(ExtrasAssistant, "argument_extras", Clashing)
    errors = [e for e in check_assistants() if e.id == "toolcalling.E003"]
    assert len(errors) == 1 and "add.a" in errors[0].msg and errors[0].obj is ExtrasAssistant


def test_extras_are_stored_as_json_values(strict_model, alice):
    strict_model.call("add", {"a": 1, "b": 1, "due": "2026-12-24"})
    strict_model.reply("2")
    result = Assistant.get("lf_dated_extras").run(alice, "1+1 by Christmas Eve")

    call = ToolCall.objects.get(conversation=result.conversation)
    assert call.status == ToolCall.Status.SUCCEEDED
    assert call.extras == {"due": "2026-12-24"}
    call.refresh_from_db()
    assert call.extras == {"due": "2026-12-24"}
