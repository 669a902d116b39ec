"""``Tool``, a function the model may call, with its schema and options, and ``make_tool``, which builds one."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from ..exceptions import ImproperlyDefined, InvalidArguments
from ._context import ToolContext, holds_permissions
from ._schema import build_arguments_model, describe_validation_error, json_schema, split_docstring, unexpected_keys
from ._text import MAX_JSON_DEPTH, nested_too_deeply, storable_json

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

ApprovalRule = bool | Callable[[ToolContext, dict[str, Any]], bool]
ApprovalPreview = Callable[[ToolContext, dict[str, Any]], Any]
APPROVERS = ("staff", "user")


def humanise(name: str) -> str:
    """A tool name as words for people: ``cancel_order`` and ``cancelOrder`` become "Cancel order"."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    words = re.sub(r"[_\-\s]+", " ", words).strip().lower()
    return words[:1].upper() + words[1:]


def arguments_object(raw: Any) -> dict[str, Any]:
    """Arguments (JSON text, or already parsed) as a JSON object, empty text as ``{}``; else ``InvalidArguments``."""
    if raw is None or raw == "":
        return {}
    too_deep = InvalidArguments(f"arguments are nested more than {MAX_JSON_DEPTH} levels deep")
    data = raw
    if isinstance(raw, str):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidArguments(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})")
        except RecursionError:
            raise too_deep
    if nested_too_deeply(data):  # before anything walks them recursively (or a JSON column refuses them)
        raise too_deep
    # Lone surrogates ("\ud800" is valid JSON) would fail the tool's own output, a page or an error message
    # that shows them; they become U+FFFD, in text and in parsed arguments (an approver's edit) alike.
    data = storable_json(data)
    if not isinstance(data, dict):
        raise InvalidArguments("arguments must be a JSON object")
    return data


@dataclass(kw_only=True, eq=False)
class Tool:
    """A registered tool: the function, what the model is told about it, and how it may be called.

    ``parse_arguments`` and ``invoke`` are the two places that rely on the Python signature; a tool backed
    by something else (an MCP server's tool, validated against its JSON schema) is a subclass that
    overrides them and ``module``.
    """

    func: Callable[..., Any]
    """The site's function."""
    name: str
    """The name the model calls it by (``^[a-zA-Z0-9_-]{1,64}$``)."""
    description: str
    """What the model reads to decide when to call it."""
    label: str = ""
    """What end users see instead of the name (may be a lazy translation); default: the name, humanised."""
    requires_approval: ApprovalRule = False
    """True, or ``(ctx, args) -> bool``: the call waits for a decision before it runs."""
    approval_preview: ApprovalPreview | None = None
    """``(ctx, args) -> str | dict``: what approvers see of the current state when they look at a waiting call."""
    approver: str = "staff"
    """Who decides a gated call: ``"staff"`` (the approve permission) or ``"user"`` (the conversation's user)."""
    return_direct: bool = False
    """The result is the reply; the model is not asked again (when every call of an answer is direct)."""
    idempotent: bool = False
    """Running it again with the same ``ctx.idempotency_key`` does no harm: a call whose process died while it ran
    is run again, where any other tool's call waits for a person to say what happened ("outcome unknown")."""
    atomic: bool = False
    """The tool writes only to the site's database (where the app writes): it runs inside the transaction that
    stores its result, so its writes and its result are stored together or not at all, exactly once. A call whose
    process died while it ran is run again: what it wrote was rolled back with it."""
    permissions: tuple[str, ...] = ()
    """Django permissions the user must hold for the tool to be offered at all."""
    arguments_model: type[BaseModel] = field(repr=False)
    """The pydantic model arguments are validated with."""
    context_param: str | None = None
    """The parameter that receives the ``ToolContext``, if any."""
    parameters: dict[str, Any] = field(default_factory=dict, repr=False)
    """The JSON schema of the arguments."""

    def __post_init__(self) -> None:
        if isinstance(self.label, str) and not self.label:
            self.label = humanise(self.name)

    @property
    def module(self) -> str:
        return f"{self.func.__module__}.{self.func.__qualname__}"

    def definition(self) -> dict[str, Any]:
        """The entry for the ``tools`` list of a Chat Completions request."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @property
    def may_run_again(self) -> bool:
        """Whether a call whose process died while it ran may simply run again (``idempotent`` or ``atomic``)."""
        return self.idempotent or self.atomic

    def needs_approval(self, ctx: ToolContext, arguments: dict[str, Any]) -> bool:
        rule = self.requires_approval
        return bool(rule(ctx, arguments)) if callable(rule) else bool(rule)

    def user_may_use(self, user: object) -> bool:
        return not self.permissions or holds_permissions(user, self.permissions)

    def parse_arguments(self, raw: str | dict[str, Any] | None, *, strict: bool = False) -> BaseModel:
        """Parse and validate the model's arguments (JSON text or a dict). ``strict``: as the JSON schema says,
        with no coercion (``"5"`` is not an integer, nor ``true``), as an approver's edit is judged."""
        data = arguments_object(raw)
        unexpected = unexpected_keys(data, self.parameters)
        if unexpected:
            raise InvalidArguments("; ".join(f"{where}: unexpected argument" for where in unexpected))
        try:
            if strict:  # JSON mode: dates, UUIDs and enum values still come as the strings JSON has for them
                return self.arguments_model.model_validate_json(json.dumps(data), strict=True)
            return self.arguments_model.model_validate(data)
        except ValidationError as exc:
            raise InvalidArguments(describe_validation_error(exc))

    def invoke(self, ctx: ToolContext, arguments: BaseModel) -> Any:
        """Call the function with validated arguments (nested models stay models) and the context."""
        kwargs = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        if self.context_param:
            kwargs[self.context_param] = ctx
        return self.func(**kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the tool object calls the plain function, so tools stay ordinary functions in tests."""
        return self.func(*args, **kwargs)


def make_tool(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    requires_approval: ApprovalRule = False,
    approval_preview: ApprovalPreview | None = None,
    approver: str = "staff",
    return_direct: bool = False,
    permissions: Sequence[str] = (),
    idempotent: bool = False,
    atomic: bool = False,
) -> Tool:
    """Build a ``Tool`` from a function, collecting every problem into one error."""
    tool_name = name or func.__name__
    doc_text, param_docs = split_docstring(func.__doc__)
    problems = []
    if not NAME_RE.match(tool_name):
        problems.append(f"name {tool_name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
    text = (description or doc_text or "").strip()
    if not text:
        problems.append("no description: write a docstring or pass description=")
    if isinstance(permissions, str):
        problems.append("permissions must be a list of permission strings, not one string")
    # A lazy translation is left unevaluated: tools are defined before a language is active.
    if isinstance(label, str) and not label.strip():
        problems.append("label must not be empty: leave it out to show the name, humanised")
    if not (isinstance(requires_approval, bool) or callable(requires_approval)):
        problems.append("requires_approval must be a bool or a callable (ctx, args) -> bool")
    if approval_preview is not None and not callable(approval_preview):
        problems.append("approval_preview must be a callable (ctx, args) -> str | dict")
    if approver not in APPROVERS:
        problems.append(f"approver must be one of {', '.join(map(repr, APPROVERS))}, not {approver!r}")
    if not isinstance(idempotent, bool) or not isinstance(atomic, bool):
        problems.append("idempotent and atomic must be True or False")
    if requires_approval is False and (approval_preview is not None or approver != "staff"):
        problems.append("approval_preview and approver apply only to a tool with requires_approval")
    try:
        model, context_param = build_arguments_model(func, tool_name if not problems else "tool", param_docs)
        parameters = json_schema(model)
    except ImproperlyDefined as exc:
        problems.append(str(exc).split(" cannot be used: ", 1)[-1].rstrip("."))
        model, context_param, parameters = None, None, {}
    if problems:
        raise ImproperlyDefined(f"Tool {func.__qualname__!r} cannot be used: " + "; ".join(problems) + ".")
    assert model is not None
    return Tool(
        func=func,
        name=tool_name,
        description=text,
        label=humanise(tool_name) if label is None else label,
        requires_approval=requires_approval,
        approval_preview=approval_preview,
        approver=approver,
        return_direct=return_direct,
        permissions=tuple(permissions),
        idempotent=idempotent,
        atomic=atomic,
        arguments_model=model,
        context_param=context_param,
        parameters=parameters,
    )


def result_to_text(result: Any) -> str:
    """What the model reads: strings as they are, everything else as JSON."""
    if isinstance(result, str):
        return result
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        result = dataclasses.asdict(result)
    try:
        return to_json(result).decode()
    except PydanticSerializationError:
        # Text JSON cannot encode (lone surrogates) must not turn a tool that ran into one that failed.
        plain = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        return to_json(storable_json(plain), fallback=str).decode()
