"""``ClientTool``: a tool that runs in the user's browser. The server offers it to the model and stores its call,
which waits (``approver="client"``) until the conversation's owner's frontend sends the result."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..exceptions import ImproperlyDefined, InvalidArguments
from ._context import ToolContext
from ._json_schema import schema_error, schema_problems
from ._text import MAX_JSON_DEPTH, nested_too_deeply, storable_json
from ._tool import NAME_RE, ApprovalRule, Tool, arguments_object

CLIENT = "client"  # ToolCall.Approver.CLIENT: the toolkit knows nothing of the models
EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


class ClientArguments(BaseModel):
    """A client tool's validated arguments: any JSON object its schema accepts, kept as it is."""

    model_config = ConfigDict(extra="allow")


def _runs_in_the_browser(ctx: ToolContext, /, **arguments: Any) -> Any:
    raise RuntimeError("a client tool runs in the browser, never on the server")


@dataclass(kw_only=True, eq=False)
class ClientTool(Tool):
    """A tool the browser runs: a name, a description and a JSON schema of its arguments, no Python body.

    ``ClientTool(name="show_map", description="Show a place on the page's map.", parameters={...})``, listed in an
    assistant's ``client_tools``. The model calls it like any tool; its call waits (the turn ends with the
    conversation ``awaiting_approval``) until the conversation's owner's frontend sends the result: the AI SDK's
    ``addToolResult``, AG-UI's tool message, or ``POST tool-calls/{id}/result/``. The result is checked against
    ``result_schema`` when one is given, stored as the call's result, and the conversation goes on.
    """

    func: Callable[..., Any] = field(default=_runs_in_the_browser, repr=False)
    parameters: dict[str, Any] = field(default_factory=lambda: dict(EMPTY_OBJECT), repr=False)
    """The JSON schema of the arguments (an object's); the model's arguments are validated against it."""
    result_schema: dict[str, Any] | None = field(default=None, repr=False)
    """A JSON schema the result the client sends must match; ``None``: any JSON value."""
    requires_approval: ApprovalRule = True
    approver: str = CLIENT
    arguments_model: type[BaseModel] = field(default=ClientArguments, repr=False)
    from_request: bool = False
    """Sent by a frontend with its request (AG-UI's ``tools``), not declared by the site."""

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.name, str) or not NAME_RE.match(self.name):
            problems.append(f"name {self.name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
        if not isinstance(self.description, str) or not self.description.strip():
            problems.append("description must be a non-empty string")
        problem = schema_error(self.parameters)
        if problem is None and self.parameters.get("type") != "object":
            problem = 'must be the schema of an object ({"type": "object", ...})'
        if problem is not None:
            problems.append(f"parameters {problem}")
        if self.result_schema is not None and (problem := schema_error(self.result_schema)) is not None:
            problems.append(f"result_schema {problem}")
        if self.requires_approval is not True or self.approver != CLIENT:
            problems.append(
                "a client tool's call always waits for the client: requires_approval and approver are fixed"
            )
        if problems:
            raise ImproperlyDefined(f"Client tool {self.name!r} cannot be used: " + "; ".join(problems) + ".")
        self.description = self.description.strip()
        super().__post_init__()

    @property
    def module(self) -> str:
        return f"client:{self.name}"

    def parse_arguments(self, raw: str | dict[str, Any] | None, *, strict: bool = False) -> BaseModel:
        data = arguments_object(raw)
        problems = schema_problems(self.parameters, data)
        if problems:
            raise InvalidArguments("; ".join(problems))
        return ClientArguments.model_validate(data)

    def invoke(self, ctx: ToolContext, arguments: BaseModel) -> Any:
        raise RuntimeError(f"the client tool {self.name!r} runs in the browser, never on the server")

    @classmethod
    def from_definition(cls, data: Any) -> ClientTool:
        """A tool a frontend sent with its request (``{"name", "description", "parameters"}``, AG-UI's ``Tool``);
        ``ImproperlyDefined`` for one that cannot be offered."""
        if not isinstance(data, dict):
            raise ImproperlyDefined("A client tool must be an object with a name, a description and parameters.")
        parameters = data.get("parameters")
        if isinstance(parameters, dict) and parameters and "type" not in parameters:
            parameters = {"type": "object", **parameters}  # properties without a type: an object's, as sent
        return cls(
            name=data.get("name"),  # type: ignore[arg-type]  # checked in __post_init__
            description=data.get("description") or "",
            parameters=dict(EMPTY_OBJECT) if parameters in (None, {}) else parameters,
            from_request=True,
        )

    def as_definition(self) -> dict[str, Any]:
        """What ``from_definition`` reads back (how a frontend's tools are kept for the turn's continuation)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def client_result(value: Any, schema: dict[str, Any] | None) -> Any:
    """A result a client sent, as it is stored (text no database refuses); ``InvalidArguments`` naming what does
    not match ``schema`` (a client tool's ``result_schema``; ``None``: any JSON value)."""
    if nested_too_deeply(value):  # before anything walks it recursively
        raise InvalidArguments(f"the result is nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidArguments("the result must be a JSON value")
    value = storable_json(value)
    if schema is not None:
        problems = schema_problems(schema, value, what="(result)")
        if problems:
            raise InvalidArguments("; ".join(problems))
    return value


FRONTEND_TOOLS_KEY = "frontend_tools"  # in ``Conversation.state``: the tools its frontend sent last


def frontend_tools(conversation: Any) -> list[ClientTool]:
    """The tools the conversation's frontend sent with its last request (kept in its ``state``, so the turn's
    continuation offers them too); one that cannot be offered is left out."""
    found = []
    for item in ((conversation.state or {}) if conversation is not None else {}).get(FRONTEND_TOOLS_KEY) or []:
        try:
            found.append(ClientTool.from_definition(item))
        except ImproperlyDefined:
            continue
    return found
