"""Tool definitions: JSON schemas from signatures, validation, errors at definition time."""

import dataclasses
import enum
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from toolcalling import ToolContext
from toolcalling.exceptions import ImproperlyDefined, InvalidArguments
from toolcalling.toolkit import result_to_text
from toolcalling.toolkit._tool import make_tool


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    sku: str = Field(description="Stock keeping unit")
    quantity: int = 1


def test_schema_types_enums_optionals_and_descriptions():
    def order(
        ctx: ToolContext,
        order_no: Annotated[str, Field(description="Order number, e.g. 20250719-0032")],
        speed: Literal["standard", "express"],
        color: Color,
        note: str | None,
        count: int = 2,
    ) -> dict:
        """Place an order.

        Args:
            speed: How fast to ship.
            count: How many.
        Returns:
            The order.
        """
        return {}

    t = make_tool(order)
    params = t.parameters
    assert t.description == "Place an order."
    assert set(params["properties"]) == {"order_no", "speed", "color", "note", "count"}
    assert "ctx" not in params["properties"]
    assert params["required"] == ["order_no", "speed", "color"]
    assert params["properties"]["order_no"] == {"description": "Order number, e.g. 20250719-0032", "type": "string"}
    assert params["properties"]["speed"]["enum"] == ["standard", "express"]
    assert params["properties"]["speed"]["description"] == "How fast to ship."
    assert params["properties"]["count"]["default"] == 2
    assert params["properties"]["count"]["description"] == "How many."
    color = params["properties"]["color"]
    enum_schema = params["$defs"][color["$ref"].split("/")[-1]] if "$ref" in color else color
    assert enum_schema["enum"] == ["red", "blue"]
    assert "title" not in params and "title" not in params["properties"]["count"]


def test_nested_models_and_no_parameters():
    def add_items(items: list[Item]) -> int:
        """Add items to the basket."""
        return len(items)

    def ping() -> str:
        """Ping."""
        return "pong"

    nested = make_tool(add_items).parameters
    ref = nested["properties"]["items"]["items"]["$ref"].split("/")[-1]
    assert nested["$defs"][ref]["properties"]["sku"]["description"] == "Stock keeping unit"
    assert make_tool(ping).parameters == {"type": "object", "properties": {}}


def test_every_problem_reported_at_once_naming_the_function():
    def bad(x, *args, _y: int = 1, **kwargs):  # noqa: ANN001, ANN202
        return None

    with pytest.raises(ImproperlyDefined) as info:
        make_tool(bad, name="not a valid name!")
    message = str(info.value)
    assert "test_every_problem_reported_at_once_naming_the_function.<locals>.bad" in message
    for fragment in ("must match", "no description", "'x' has no type annotation", "*args", "'_y'"):
        assert fragment in message


def test_name_limits():
    def f() -> None:
        """Doc."""

    assert make_tool(f, name="a" * 64).name == "a" * 64
    with pytest.raises(ImproperlyDefined):
        make_tool(f, name="a" * 65)
    assert make_tool(f, name="get-order_2").name == "get-order_2"


def test_arguments_validated_and_extra_arguments_rejected():
    def ship(ctx: ToolContext, order_no: str, express: bool = False) -> str:
        """Ship."""
        return order_no

    t = make_tool(ship)
    parsed = t.parse_arguments('{"order_no": "A1"}')
    assert parsed.order_no == "A1" and parsed.express is False
    with pytest.raises(InvalidArguments, match="ctx: unexpected argument"):
        t.parse_arguments('{"order_no": "A1", "ctx": {"user": 1}}')
    with pytest.raises(InvalidArguments, match="order_no: Field required"):
        t.parse_arguments("{}")
    with pytest.raises(InvalidArguments, match="not valid JSON"):
        t.parse_arguments('{"order_no": ')
    with pytest.raises(InvalidArguments, match="JSON object"):
        t.parse_arguments("[1, 2]")


def test_invoke_passes_context_and_nested_models():
    seen = {}

    def add_items(context: ToolContext, items: list[Item]) -> int:
        """Add items."""
        seen["ctx"] = context
        seen["items"] = items
        return sum(i.quantity for i in items)

    t = make_tool(add_items)
    ctx = ToolContext(user=None, extra={"tenant": 7})
    assert t.invoke(ctx, t.parse_arguments('{"items": [{"sku": "a", "quantity": 3}, {"sku": "b"}]}')) == 4
    assert seen["ctx"] is ctx
    assert isinstance(seen["items"][0], Item)


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_results_become_text():
    assert result_to_text("plain") == "plain"
    assert result_to_text({"a": 1, "b": [1, 2]}) == '{"a":1,"b":[1,2]}'
    assert result_to_text([1, "x"]) == '[1,"x"]'
    assert result_to_text(Point(1, 2)) == '{"x":1,"y":2}'
    assert result_to_text(Item(sku="s")) == '{"sku":"s","quantity":1}'
    assert result_to_text(None) == "null"
