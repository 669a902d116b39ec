"""Bodies of every shape to every endpoint the OpenAPI schema leaves out, and to the REST ones in the shapes
schemathesis does not send (forms, multipart, broken JSON): the frontends' (AI SDK, AG-UI), MCP's, the streams,
the attachments and the admin's actions and change forms; as the owner and as another user.

JSON and form-encoded, nested past every limit, huge, with lone surrogates and NULs, a wrong type in any field:
no request answers 500 (nor logs an internal error), a refused request stores nothing (no ``Conversation``,
``Message``, ``ToolCall`` or ``Attachment`` more or less), and every refusal of the API is in the app's error shape
(``{"detail", "code", "status"}``, DRF's 400 shape for validation, JSON-RPC errors on MCP).

The examples are derandomised, so every run sends the same bodies; the test runs on the suite's database (every
pass of ``make test``), 15 examples per endpoint and user (``TOOLCALLING_EVERY_BODY_EXAMPLES=200`` for a longer
search). A 500 still owed a fix is let pass through ``KNOWN_500`` (empty now); ``SMALLEST`` holds the smallest body
of each 500 the test found, a regression test each, which must fail while its entry is listed.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from hypothesis import HealthCheck, Phase, event, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from tests.attachments import files
from toolcalling.attachments import store
from toolcalling.models import Attachment, Conversation, Message, ToolCall
from toolcalling.testutils import override_toolcalling

# The 500s (or refusals in Django's HTML) a fix is still owed for, as (endpoint, what in the body causes it); a
# failure of a request whose body has that in it is let pass (``known_500``), any other fails the test. Empty: the
# seven this test found first are fixed, and their smallest bodies (``SMALLEST``) are plain tests now. An entry
# added here names a key of SYMPTOMS, which says how it is recognised, and its body goes into SMALLEST.
KNOWN_500: set[tuple[str, str]] = set()


# Each example is a real request on the whole stack (a turn runs when one is asked for): a fixed, modest budget.
EXAMPLES = hypothesis_settings(
    max_examples=int(os.environ.get("TOOLCALLING_EVERY_BODY_EXAMPLES", 15)),
    deadline=None,
    derandomize=True,
    database=None,
    # No shrinking: a failure is reported as it was drawn (derandomised, so the next run draws it again), and a
    # failing run stays within the suite's time too.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

MODELS = (Conversation, Message, ToolCall, Attachment)

# --- Strategies, shared by every endpoint -------------------------------------------------------------------------

# Any code point, lone surrogates and NUL included, and text made often of the troublesome ones.
CHARS = st.characters(exclude_categories=())
TEXT = st.one_of(
    st.text(CHARS, max_size=30),
    st.text(st.sampled_from(["\ud800", "\udfff", "\x00", "\n", '"', "한", "a", "/", "%"]), max_size=12),
)
# Past every column's and every integer type's range as often as within them.
NUMBERS = st.one_of(
    st.integers(-(2**31), 2**31),
    st.integers(2**31, 2**64),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=10
)
# Huge: long enough to pass any column's length, and (rarely) the site's DATA_UPLOAD_MAX_MEMORY_SIZE.
HUGE_TEXT = st.builds(lambda piece, n: piece * n, st.sampled_from(["a", "\x00", "\ud800", "한 "]),
                      st.one_of(st.sampled_from([300, 70_000]), st.sampled_from([300, 70_000]),
                                st.just(1_100_000)))  # fmt: skip


class NestedList(list):  # type: ignore[type-arg]
    """The outermost level of a deeply nested value: JSON as a list, shown by its depth (hypothesis's printer, which
    shows a failing example's draws, would recurse past Python's limit on the value itself)."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"<a list {depth(self)} levels deep>")


class NestedDict(dict):  # type: ignore[type-arg]
    """As ``NestedList``, for an object."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"<an object {depth(self)} levels deep>")


@st.composite
def deep(draw: Any) -> Any:
    """A value in up to 700 levels of arrays or objects: past every depth limit (and Python's recursion), and
    within them."""
    levels = draw(st.one_of(st.integers(1, 5), st.integers(30, 40), st.integers(500, 700)))
    inner = draw(SCALARS)
    key = draw(st.sampled_from(["k", "messages", "parts", "arguments"]))
    for _ in range(levels - 1):
        inner = [inner] if draw(st.booleans()) else {key: inner}
    return NestedList([inner]) if draw(st.booleans()) else NestedDict({key: inner})


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


class DeepText(str):
    """JSON text nested past Python's recursion limit, as a form field carries JSON (a JSON body cannot: the
    encoder would stop at that limit too)."""

    __slots__ = ()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"<JSON text {len(self) // 2} levels deep>")


DEEP_TEXT = st.integers(1_000, 3_000).map(lambda n: DeepText("[" * n + "]" * n))
# What any field may hold instead of what it should: every JSON type, wrong or too long or too deep.
HOSTILE = st.one_of(VALUES, deep(), HUGE_TEXT, DEEP_TEXT)


@dataclass(frozen=True)
class Ref:
    """A place in a body for an id of the example's world (``World.ids``): drawn like any value, filled in
    when the request is made, so bodies reach real objects as often as made-up ones."""

    name: str
    text: bool = False  # the id as a string (as a JSON body carries a number it reads as text)


def ref(*names: str, text: bool = False) -> st.SearchStrategy[Ref]:
    return st.sampled_from([Ref(n, text) for n in names])


def places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a body, the body itself last (a deeply nested value is one place)."""
    if isinstance(value, (NestedList, NestedDict)):
        pass
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from places(item, (*path, index))
    yield path


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """The body with what is at ``path`` replaced by ``new`` (``DROP``: taken out)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        inner = {**value, head: replaced(value[head], rest, new)}
        return {k: v for k, v in inner.items() if v is not DROP}
    items = [*value[:head], replaced(value[head], rest, new), *value[head + 1 :]]
    return [v for v in items if v is not DROP]


DROP = object()


@st.composite
def spoiled(draw: Any, good: st.SearchStrategy[Any]) -> Any:
    """A well-formed body with none, one or two places in it (anywhere, however deep) wrong: another value of
    any type, too long or too deep, or taken out. So bodies get past the first checks to the later ones."""
    value = draw(good)
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
        path = draw(st.sampled_from(list(places(value))))
        value = replaced(value, path, draw(st.one_of(HOSTILE, st.just(DROP)) if path else HOSTILE))
    return value


def body_of(fields: dict[str, st.SearchStrategy[Any]], required: tuple[str, ...] = ()) -> st.SearchStrategy[Any]:
    """A body with the ``required`` fields and any of the others, spoiled in a place or two, now and then with a
    field no one asked for."""
    must = {name: fields[name] for name in required}
    optional = {name: value for name, value in fields.items() if name not in required}
    good = st.fixed_dictionaries(must, optional=optional)
    extra = st.dictionaries(TEXT, HOSTILE, max_size=2)
    return st.one_of(spoiled(good), spoiled(good), spoiled(good), st.builds(lambda a, b: {**b, **a}, good, extra))


def mostly(good: st.SearchStrategy[Any], other: st.SearchStrategy[Any] = TEXT) -> st.SearchStrategy[Any]:
    """An id of the world most of the time (the simplest draw, so the first examples), made-up text the rest."""
    return st.tuples(st.integers(0, 3), good, other).map(lambda t: t[2] if t[0] == 3 else t[1])


# How a body is sent: JSON as browsers send it (surrogates escaped), JSON as raw bytes (a lone surrogate is then
# invalid UTF-8), a URL-encoded form, a multipart form, or bytes under any content type.
ENCODINGS = ["json", "json-bytes", "form", "multipart"]
CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
RAW = st.tuples(st.binary(max_size=80), st.sampled_from(CONTENT_TYPES))

# --- Encoding a body ------------------------------------------------------------------------------------------------

BOUNDARY = "----every-body-boundary"


def utf8(text: str) -> bytes:
    """Text as UTF-8 bytes, a lone surrogate as the bytes it would encode to (as a careless client sends it)."""
    return text.encode("utf-8", "surrogatepass")


def form_value(value: Any) -> str:
    """A form field's text: strings as they are, anything else as JSON (what a client that posts forms sends)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, default=str)


def form_items(body: Any) -> list[tuple[str, Any]]:
    """The fields of a form: a list is sent as the field repeated; a body that is no object as one field."""
    if not isinstance(body, dict):
        return [("body", body)]
    items: list[tuple[str, Any]] = []
    for name, value in body.items():
        if isinstance(value, list) and value and all(not isinstance(v, (list, dict)) for v in value):
            items += [(name, v) for v in value]
        else:
            items.append((name, value))
    return items


def encode(body: Any, encoding: str) -> tuple[bytes, str]:
    """The body's bytes and content type."""
    if encoding == "json":
        return json.dumps(body, default=str).encode(), "application/json"
    if encoding == "json-bytes":
        return utf8(json.dumps(body, ensure_ascii=False, default=str)), "application/json; charset=utf-8"
    if encoding == "form":
        pairs = [quote_from_bytes(utf8(str(n))) + "=" + quote_from_bytes(utf8(form_value(v))) for n, v in
                 form_items(body)]  # fmt: skip
        return "&".join(pairs).encode(), "application/x-www-form-urlencoded"
    parts = []
    for name, value in form_items(body):
        if isinstance(value, Upload):
            head = f'Content-Disposition: form-data; name="{name}"; filename="{value.name}"\r\n'
            parts.append(utf8(head) + f"Content-Type: {value.content_type}\r\n\r\n".encode() + value.data)
        else:
            head = f'Content-Disposition: form-data; name="{name}"\r\n\r\n'
            parts.append(utf8(head) + utf8(form_value(value)))
    data = b"".join(f"--{BOUNDARY}\r\n".encode() + p + b"\r\n" for p in parts) + f"--{BOUNDARY}--\r\n".encode()
    return data, f"multipart/form-data; boundary={BOUNDARY}"


@dataclass(frozen=True)
class Upload:
    """A file part of a multipart body."""

    name: str
    data: bytes
    content_type: str = "application/octet-stream"

    def __str__(self) -> str:  # in a JSON or URL-encoded body: its name
        return self.name


UPLOADS = st.builds(
    Upload,
    name=st.one_of(st.sampled_from(["a.png", "", "../../x.png", "a" * 300]), TEXT.filter(lambda t: '"' not in t)),
    data=st.one_of(st.sampled_from([files.PNG, files.PDF, files.SVG, files.EXECUTABLE, b""]), st.binary(max_size=40)),
    content_type=st.sampled_from(["image/png", "application/pdf", "text/html", ""]),
)

# --- The world each example starts from --------------------------------------------------------------------------


@dataclass
class World:
    """Fresh objects for one example: alice's idle conversation, one waiting for her own decision (``ops``'s
    ``move_points``), one waiting for a staff member's, and an upload of hers not yet sent."""

    ids: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def make(cls, alice: Any) -> World:
        idle = Conversation.objects.create(user=alice, assistant_id="helper", title="idle")
        mine = waiting(alice, "ops", "move_points", {"name": "alice", "points": 5}, ToolCall.Approver.USER)
        staff = waiting(alice, "helper", "delete_everything", {"confirm": "yes"}, ToolCall.Approver.STAFF)
        upload = store(SimpleUploadedFile("pixel.png", files.PNG), alice)
        return cls(
            ids={
                "conversation": str(idle.pk),
                "waiting": str(mine.conversation_id),
                "staff_waiting": str(staff.conversation_id),
                "user_call": mine.pk,
                "staff_call": staff.pk,
                "user_call_id": mine.call_id,
                "attachment": str(upload.pk),
                "missing": str(uuid.uuid4()),
                "missing_call": 2**31 - 1,
            }
        )

    def fill(self, value: Any) -> Any:
        """The body with the world's ids where it has a ``Ref``."""
        if isinstance(value, Ref):
            return str(self.ids[value.name]) if value.text else self.ids[value.name]
        if isinstance(value, (NestedList, NestedDict)):
            return value  # drawn without ids
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value


def waiting(user: Any, assistant_id: str, name: str, arguments: dict[str, Any], approver: str) -> ToolCall:
    """A conversation whose last answer asked for one call that waits for ``approver``'s decision."""
    conversation = Conversation.objects.create(
        user=user, assistant_id=assistant_id, title="waiting", status=Conversation.Status.AWAITING_APPROVAL
    )
    Message.objects.create(conversation=conversation, role="user", content=f"Please {name}")
    asked = Message.objects.create(conversation=conversation, role="assistant", content="")
    return ToolCall.objects.create(
        conversation=conversation,
        message=asked,
        index=0,
        call_id=f"call_{uuid.uuid4().hex[:12]}",
        name=name,
        arguments=arguments,
        raw_arguments=json.dumps(arguments),
        status=ToolCall.Status.AWAITING_APPROVAL,
        requires_approval=True,
        approver=approver,
    )


# --- The endpoints and the bodies each reads ---------------------------------------------------------------------

CONVERSATION = ref("conversation", "conversation", "waiting", "staff_waiting", "missing")
CALL = ref("user_call", "staff_call", "missing_call")
CALL_TEXT = ref("user_call", "staff_call", "missing_call", text=True)

TEXT_PART = st.fixed_dictionaries({"type": st.just("text"), "text": TEXT})
DATA_URL = st.one_of(
    st.just("data:image/png;base64," + base64.b64encode(files.PNG).decode()),
    st.builds(lambda head, data: f"{head},{data}", st.sampled_from(["data:image/png;base64", "data:;base64",
              "http://example.com/x.png", "data:text/plain"]), TEXT),
)  # fmt: skip
FILE_PART = st.fixed_dictionaries(
    {"type": st.just("file")},
    optional={"url": DATA_URL, "mediaType": st.just("image/png"), "filename": TEXT},
)
APPROVAL_PART = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["tool-move_points", "dynamic-tool", "tool-delete_everything"]),
        "toolCallId": ref("user_call_id"),
        "state": st.just("approval-responded"),
        "approval": st.fixed_dictionaries(
            {"id": st.one_of(CALL_TEXT, CALL), "approved": st.booleans()},
            optional={"reason": TEXT},
        ),
    }
)
# What the SDK sends: the user's new message (text and file parts), or after addToolApprovalResponse the
# assistant message whose tool parts carry the answers; either with any part, or any key, wrong.
USER_MESSAGE = st.fixed_dictionaries(
    {"role": st.just("user"), "parts": st.lists(st.one_of(TEXT_PART, TEXT_PART, FILE_PART), max_size=3)},
    optional={"id": TEXT},
)
ANSWERS_MESSAGE = st.fixed_dictionaries(
    {"role": st.just("assistant"), "parts": st.lists(APPROVAL_PART, min_size=1, max_size=2)},
    optional={"id": TEXT},
)
OTHERS = {"trigger": st.sampled_from(["submit-message", "regenerate-message"]), "messageId": TEXT,
          "background": st.booleans()}  # fmt: skip
AI_SDK_CHAT = st.one_of(
    body_of({"id": CONVERSATION, "messages": st.lists(USER_MESSAGE, min_size=1, max_size=2), **OTHERS},
            required=("id", "messages")),
    body_of({"id": ref("waiting"), "messages": st.lists(ANSWERS_MESSAGE, min_size=1, max_size=2), **OTHERS},
            required=("id", "messages")),
)  # fmt: skip

AG_UI_MESSAGE = st.fixed_dictionaries(
    {"id": TEXT, "role": st.sampled_from(["user", "user", "assistant", "developer"]),
     "content": st.one_of(TEXT, st.lists(TEXT_PART, max_size=2))},
)  # fmt: skip
AG_UI_TOOL = st.fixed_dictionaries({"name": TEXT, "description": TEXT, "parameters": st.dictionaries(TEXT, VALUES)})
RESUME = st.fixed_dictionaries(
    {"interruptId": CALL_TEXT, "status": st.sampled_from(["resolved", "cancelled"])},
    optional={"payload": st.one_of(st.booleans(), st.fixed_dictionaries({"approved": st.booleans()},
                                                                             optional={"reason": TEXT}))},
)  # fmt: skip
AG_UI_FIELDS = {"runId": TEXT, "state": VALUES, "tools": st.lists(AG_UI_TOOL, max_size=2),
                "context": st.lists(st.fixed_dictionaries({"description": TEXT, "value": TEXT}), max_size=2),
                "forwardedProps": VALUES}  # fmt: skip
AG_UI_REQUIRED = ("threadId", "runId", "messages", "state", "tools", "context", "forwardedProps")
AG_UI = st.one_of(
    body_of({"threadId": CONVERSATION, "messages": st.lists(AG_UI_MESSAGE, min_size=1, max_size=2), **AG_UI_FIELDS},
            required=AG_UI_REQUIRED),
    body_of({"threadId": ref("waiting"), "messages": st.just([]), "resume": st.lists(RESUME, min_size=1, max_size=2),
             **AG_UI_FIELDS}, required=(*AG_UI_REQUIRED, "resume")),
)  # fmt: skip

MCP_CALL = st.fixed_dictionaries(
    {"name": st.sampled_from(["add", "delete_everything", "get_tool_call_status", "whoami"])},
    optional={"arguments": st.one_of(st.fixed_dictionaries({"a": NUMBERS, "b": NUMBERS}),
                                           st.fixed_dictionaries({"tool_call_id": CALL}),
                                           st.fixed_dictionaries({"confirm": TEXT}))},
)  # fmt: skip
MCP_MESSAGE = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "method": st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "notifications/initialized"]),
    },
    optional={"id": st.integers(), "params": st.one_of(MCP_CALL, st.fixed_dictionaries({}))},
)
MCP = st.one_of(MCP_MESSAGE, MCP_MESSAGE, st.lists(MCP_MESSAGE, max_size=4), HOSTILE)

MESSAGE_BODY = body_of(
    {
        "content": TEXT,
        "attachments": st.lists(ref("attachment", "missing"), max_size=2),
        "background": st.booleans(),
        "files": UPLOADS,
    },
    required=("content",),
)

ADMIN_CHANGE = body_of(
    {
        "arguments": st.one_of(VALUES.map(json.dumps), st.just('{"confirm": "no"}')),
        "_approve": st.just("Approve"),
        "_reject": st.just("Reject"),
        "_save": st.just("Save"),
        "reject_reason": TEXT,
    }
)
ADMIN_ACTION = body_of(
    {
        "action": st.sampled_from(["approve_selected", "reject_selected", "delete_selected", "nothing"]),
        "_selected_action": st.lists(CALL, max_size=2),
        "index": st.sampled_from(["0", "1"]),
        "post": st.sampled_from(["yes", "no"]),
        "reason": TEXT,
        "select_across": st.sampled_from(["0", "1"]),
    }
)
ADMIN_DECIDE = body_of({"_approve": st.just("1"), "_reject": st.just("1"), "post": st.just("yes"), "reason": TEXT})
CONVERSATION_CHANGE = body_of(
    {
        "title": TEXT,
        "status": st.just("idle"),
        "user": st.integers(),
        "messages-TOTAL_FORMS": st.sampled_from(["0", "1", "-1", "1000000"]),
        "messages-INITIAL_FORMS": st.sampled_from(["0", "1"]),
    }
)
CONVERSATION_ACTION = body_of(
    {
        "action": st.sampled_from(["add_to_dataset", "delete_selected"]),
        "_selected_action": st.lists(CONVERSATION, max_size=2),
        "index": st.just("0"),
    }
)


@dataclass(frozen=True)
class Endpoint:
    """One endpoint: its method, its path (``{name}`` filled from the world, ``{path}`` drawn), the bodies it
    reads, and how a request to it is made (``admin``: a browser session at the admin, else an API client)."""

    name: str
    method: str
    path: str
    body: st.SearchStrategy[Any] = st.none()
    paths: st.SearchStrategy[Any] = st.just("")  # what {path} is: an id of the world, or any text
    query: st.SearchStrategy[Any] = st.just({})
    headers: st.SearchStrategy[dict[str, str]] = st.just({})
    admin: bool = False


PATH_IDS = mostly(CONVERSATION)
EVENT_IDS = st.one_of(st.integers(-5, 2**70).map(str), TEXT)
SSE = {"HTTP_ACCEPT": "text/event-stream"}
API = "/api/toolcalling/"

ENDPOINTS = [
    Endpoint("conversations", "POST", API + "conversations/",
             body_of({"assistant": st.sampled_from(["helper", "ops", "nobody"]), "title": TEXT},
                     required=("assistant",))),
    Endpoint("conversation", "PATCH", API + "conversations/{path}/",
             body_of({"title": TEXT, "assistant": TEXT, "status": TEXT}), paths=PATH_IDS),
    Endpoint("messages", "POST", API + "conversations/{path}/messages/", MESSAGE_BODY, paths=PATH_IDS),
    Endpoint("messages (SSE)", "POST", API + "conversations/{path}/messages/", MESSAGE_BODY, paths=PATH_IDS,
             headers=st.just(SSE)),
    Endpoint("cancel", "POST", API + "conversations/{path}/cancel/", HOSTILE, paths=PATH_IDS),
    Endpoint("stop", "POST", API + "conversations/{path}/stop/", HOSTILE, paths=PATH_IDS),
    Endpoint("events (SSE)", "GET", API + "conversations/{path}/events/", paths=PATH_IDS,
             query=st.fixed_dictionaries({}, optional={"after": EVENT_IDS}),
             headers=st.one_of(st.just(SSE), EVENT_IDS.map(lambda i: {**SSE, "HTTP_LAST_EVENT_ID": i}))),
    Endpoint("approve", "POST", API + "tool-calls/{path}/approve/",
             body_of({"arguments": st.one_of(st.fixed_dictionaries({"name": TEXT, "points": NUMBERS}),
                                             st.fixed_dictionaries({"confirm": TEXT}))}),
             paths=mostly(CALL)),
    Endpoint("reject", "POST", API + "tool-calls/{path}/reject/", body_of({"reason": TEXT}, required=("reason",)),
             paths=mostly(CALL)),
    Endpoint("tool-calls", "GET", API + "tool-calls/", query=st.fixed_dictionaries({}, optional={"status": TEXT})),
    Endpoint("attachments", "POST", API + "attachments/", body_of({"file": UPLOADS}, required=("file",))),
    Endpoint("attachment content", "GET", API + "attachments/{path}/content/",
             paths=mostly(ref("attachment", "attachment", "missing"))),
    Endpoint("ai-sdk/chat", "POST", API + "ai-sdk/chat/", AI_SDK_CHAT),
    Endpoint("ai-sdk/chat (SSE)", "POST", API + "ai-sdk/chat", AI_SDK_CHAT, headers=st.just(SSE)),
    Endpoint("ai-sdk/stream", "GET", API + "ai-sdk/chat/{path}/stream", paths=PATH_IDS),
    Endpoint("ag-ui", "POST", API + "ag-ui/", AG_UI, headers=st.just(SSE)),
    Endpoint("mcp", "POST", API + "mcp/{path}/", MCP,
             paths=mostly(st.sampled_from(["helper", "ops"])),
             headers=st.sampled_from([{}, {"HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"}, {"HTTP_ACCEPT": "*/*"}])),
    Endpoint("admin: tool call change form", "POST", "/admin/toolcalling/toolcall/{path}/change/", ADMIN_CHANGE,
             paths=mostly(CALL), admin=True),
    Endpoint("admin: tool call actions", "POST", "/admin/toolcalling/toolcall/", ADMIN_ACTION, admin=True),
    Endpoint("admin: decide a row", "POST", "/admin/toolcalling/toolcall/{path}/decide/", ADMIN_DECIDE,
             paths=mostly(CALL), admin=True),
    Endpoint("admin: conversation change form", "POST", "/admin/toolcalling/conversation/{path}/change/",
             CONVERSATION_CHANGE, paths=PATH_IDS, admin=True),
    Endpoint("admin: conversation actions", "POST", "/admin/toolcalling/conversation/", CONVERSATION_ACTION,
             admin=True),
]  # fmt: skip

# --- Sending one request and judging its answer -----------------------------------------------------------------


class InternalErrors(logging.Handler):
    """Collects what the app, Django's request handling and Celery log as errors (a streamed turn's crash, a 500
    the test client would otherwise only log)."""

    LOGGERS = ("toolcalling", "django.request", "celery")

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> InternalErrors:
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)


def where(error: BaseException) -> str:
    """An exception as a KNOWN_500 reason: its type and the innermost frame of the app (or of the test site)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "/toolcalling/" in f.filename]
    if not frames:
        return type(error).__name__
    frame = frames[-1]
    return f"{type(error).__name__} in {frame.filename.rsplit('/toolcalling/', 1)[1]}:{frame.name}"


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes
    failure: str | None  # why it is a server error (a KNOWN_500 reason), else None


def turn_threads_end() -> None:
    """Streamed turns run in a thread of their own: each ends before the example is judged."""
    for thread in threading.enumerate():
        if thread.name.startswith("toolcalling-turn-"):
            thread.join(timeout=30)


def send(client: Any, method: str, path: str, data: bytes, content_type: str, headers: dict[str, str]) -> Answer:
    with InternalErrors() as logged:
        try:
            response = client.generic(method, path, data, content_type=content_type, **headers)
            body = b"".join(response.streaming_content) if response.streaming else response.content
        except Exception as exc:  # what the test client re-raises: the view's crash
            turn_threads_end()
            return Answer(500, "", b"", where(exc))
        turn_threads_end()
    failure = None
    for record in logged.records:
        exc_info = record.exc_info
        failure = where(exc_info[1]) if exc_info and exc_info[1] else record.getMessage()[:80]
    if failure is None and response.status_code >= 500:
        failure = f"{response.status_code} without an exception"
    return Answer(response.status_code, response.get("Content-Type", ""), body, failure)


def query_string(query: dict[str, Any]) -> str:
    pairs = [quote_from_bytes(utf8(str(k))) + "=" + quote_from_bytes(utf8(form_value(v))) for k, v in query.items()]
    return "?" + "&".join(pairs) if pairs else ""


def in_the_apps_shape(answer: Answer, endpoint: Endpoint) -> bool:
    """A refusal's body: ``{"detail", "code", "status"}``, DRF's validation shape, or on MCP JSON-RPC errors."""
    if not answer.content_type.startswith("application/json"):
        return False
    try:
        body = json.loads(answer.body)
    except ValueError:
        return False
    if isinstance(body, dict) and {"detail", "code", "status"} <= set(body):
        return isinstance(body["detail"], str) and isinstance(body["code"], str)
    if endpoint.name == "mcp" and json_rpc_errors(body):
        return True
    return validation_shape(body)


def validation_shape(body: Any) -> bool:
    """DRF's 400: messages under the fields (nested for nested fields), or a list of messages."""
    if isinstance(body, list):
        return bool(body) and all(isinstance(m, str) or validation_shape(m) for m in body)
    if isinstance(body, dict):
        return bool(body) and all(isinstance(v, (list, dict)) and validation_shape(v) for v in body.values())
    return False


def json_rpc_errors(body: Any) -> bool:
    """Whether an MCP answer is only errors (a refusal: it must have stored nothing)."""
    replies = body if isinstance(body, list) else [body]
    return bool(replies) and all(isinstance(r, dict) and r.get("jsonrpc") == "2.0" and "error" in r for r in replies)


def problem_of(answer: Answer, endpoint: Endpoint) -> str | None:
    """What is wrong with an answer: a server error, or a refusal of the API not in the app's shape."""
    if answer.failure is not None:
        return answer.failure
    if not endpoint.admin and answer.status >= 400 and not in_the_apps_shape(answer, endpoint):
        return f"a {answer.status} not in the app's shape: {answer.content_type} {answer.body[:200]!r}"
    return None


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}


def refused(answer: Answer, endpoint: Endpoint) -> bool:
    """Whether the request was refused: an error status; on MCP only errors; in the admin, a form shown again."""
    if answer.status >= 400:
        return True
    if endpoint.name == "mcp" and answer.status == 200:
        return json_rpc_errors(json.loads(answer.body))
    return endpoint.admin and "change form" in endpoint.name and answer.status == 200


# --- What the known 500s are recognised by ------------------------------------------------------------------------


def strings_under(value: Any, key: str) -> Iterator[Any]:
    """Every value held under ``key`` anywhere in a body."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key:
                yield item
            yield from strings_under(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from strings_under(item, key)


def unencodable(text: Any) -> bool:
    """A lone surrogate (no UTF-8 for it) or a NUL (no PostgreSQL text for it)."""
    return isinstance(text, str) and ("\x00" in text or any("\ud800" <= c <= "\udfff" for c in text))


def last_parts(body: Any) -> Any:
    messages = body.get("messages") if isinstance(body, dict) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    return last.get("parts") if isinstance(last, dict) else None


@dataclass(frozen=True)
class Sent:
    """What a request sent: its body (``None`` for raw bytes) and how it was encoded."""

    body: Any
    encoding: str


SYMPTOMS: dict[str, Any] = {
    "a message's parts that are no list": lambda sent: (
        bool(last_parts(sent.body)) and not isinstance(last_parts(sent.body), (list, str, dict))
    ),
    "a form field nested too deep": lambda sent: (
        sent.encoding in ("form", "multipart")
        and isinstance(sent.body, dict)
        and any(isinstance(v, DeepText) or depth(v) > 100 for v in sent.body.values())
    ),
    "a decline reason with a lone surrogate or NUL": lambda sent: any(
        unencodable(r) for r in strings_under(sent.body, "reason")
    ),
    "a file part without a file name": lambda sent: any(
        isinstance(p, dict)
        and p.get("type") == "file"
        and (not isinstance(p.get("filename"), str) or Path(p["filename"]).name in ("", ".", ".."))
        for p in (last_parts(sent.body) if isinstance(last_parts(sent.body), list) else [])
    ),
    "a runId with a lone surrogate": lambda sent: any(unencodable(r) for r in strings_under(sent.body, "runId")),
}


def known_500(endpoint: Endpoint, sent: Sent) -> str | None:
    """The KNOWN_500 entry that a failed request's body shows, if any."""
    for name, reason in KNOWN_500:
        if name == endpoint.name and SYMPTOMS[reason](sent):
            return reason
    return None


# --- The test -----------------------------------------------------------------------------------------------------


@pytest.fixture
def clients(transactional_db, alice, bob) -> Iterator[dict[str, Any]]:
    """The API as alice (who owns the world) and as bob; the admin as an approver and as staff who may only look."""
    user_model = get_user_model()
    approver = user_model.objects.create_user("sam", password="pw", is_staff=True)
    may = ["approve_toolcall", "change_toolcall", "view_toolcall", "change_conversation", "view_conversation"]
    approver.user_permissions.add(*Permission.objects.filter(codename__in=may))
    onlooker = user_model.objects.create_user("olga", password="pw", is_staff=True)
    onlooker.user_permissions.add(*Permission.objects.filter(codename__in=["view_toolcall", "view_conversation"]))
    made: dict[str, Any] = {}
    for role, api_user, admin_user in (("owner", alice, approver), ("other", bob, onlooker)):
        api = APIClient()
        api.force_authenticate(api_user)
        admin = Client()
        admin.force_login(admin_user)
        made[role] = {"api": api, "admin": admin}
    before = stored_files()
    with override_toolcalling(OFFLINE_MODEL=True, EVENTS_IDLE_TIMEOUT=0.05, EVENTS_KEEPALIVE=0.05):
        yield made
    for path in stored_files() - before:
        path.unlink()


def stored_files() -> set[Path]:
    root = Path(settings.MEDIA_ROOT)
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


@pytest.mark.parametrize("role", ["owner", "other"])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e.name for e in ENDPOINTS])
@EXAMPLES
@given(data=st.data())
def test_every_body_is_answered_without_a_500_and_a_refusal_stores_nothing(clients, alice, endpoint, role, data):
    world = World.make(alice)
    body = world.fill(data.draw(endpoint.body, label="body"))
    encoding = data.draw(st.sampled_from(ENCODINGS if endpoint.method != "GET" else ["none"]), label="encoding")
    if endpoint.admin and encoding.startswith("json"):
        encoding = "form"  # the admin's forms are posted as forms
    if encoding == "none":
        raw, content_type = b"", ""
    elif data.draw(st.integers(0, 9), label="raw bytes instead") == 9:
        raw, content_type = data.draw(RAW, label="raw")
        body = None
    else:
        raw, content_type = encode(body, encoding)
    path = endpoint.path.format(path=quote_from_bytes(utf8(str(world.fill(data.draw(endpoint.paths, label="path")))),
                                                      safe=""))  # fmt: skip
    path += query_string(world.fill(data.draw(endpoint.query, label="query")))
    headers = data.draw(endpoint.headers, label="headers")
    client = clients[role]["admin" if endpoint.admin else "api"]

    before = counts()
    answer = send(client, endpoint.method, path, raw, content_type, headers)

    problem = problem_of(answer, endpoint)
    if problem is not None and (reason := known_500(endpoint, Sent(body, encoding))):
        event(f"known: {endpoint.name}: {reason}")
        return
    assert problem is None, f"{endpoint.name}: {problem} (status {answer.status})"
    if endpoint.admin:  # Django's own pages: a 400 for a body it will not read (too big, a broken multipart)
        assert answer.status in (200, 302, 400, 403, 404, 405), answer.status
    if refused(answer, endpoint):
        assert counts() == before, (answer.status, answer.body[:300])
    event(f"{endpoint.name}: {answer.status}")


@pytest.mark.parametrize(
    ("changelist", "action"),
    [("toolcall", "approve_selected"), ("toolcall", "reject_selected"), ("conversation", "add_to_dataset")],
)
@pytest.mark.parametrize("selected", ["[]", "1.5", "not-an-id"])
def test_an_admin_action_on_ids_that_are_none_is_refused_not_a_500(clients, alice, changelist, action, selected):
    world = World.make(alice)
    before = counts()
    url = f"/admin/toolcalling/{changelist}/"
    real = world.ids["staff_call" if changelist == "toolcall" else "conversation"]
    form = {"action": action, "index": "0", "_selected_action": [real, selected]}
    response = clients["owner"]["admin"].post(url, form)
    assert response.status_code == 302 and response["Location"] == url
    assert counts() == before
    assert ToolCall.objects.get(pk=world.ids["staff_call"]).status == ToolCall.Status.AWAITING_APPROVAL
    (message,) = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == "No action was run: the selection names items this list does not have."


# The smallest body of each KNOWN_500 entry (the report's reproductions). While the entry is listed its body must
# still fail (a strict xfail), so an entry whose fix is merged is noticed and removed; then it is a plain test.
PNG_URL = "data:image/png;base64," + base64.b64encode(files.PNG).decode()
DECLINE = {"type": "tool-move_points", "state": "approval-responded"}
AG_UI_EMPTY = {"runId": "r", "state": {}, "messages": [], "tools": [], "context": [], "forwardedProps": {}}
SMALLEST: list[tuple[str, str, Any, str]] = [
    ("ai-sdk/chat", "a message's parts that are no list",
     lambda w: {"id": w.ids["conversation"], "messages": [{"role": "user", "parts": 1}]}, "json"),
    ("ai-sdk/chat", "a form field nested too deep",
     lambda w: {"id": w.ids["conversation"], "messages": DeepText("[" * 3000 + "]" * 3000)}, "form"),
    ("approve", "a form field nested too deep", lambda w: {"arguments": DeepText("[" * 3000 + "]" * 3000)}, "form"),
    ("ai-sdk/chat", "a decline reason with a lone surrogate or NUL",
     lambda w: {"id": w.ids["waiting"], "messages": [{"role": "assistant", "parts": [{
         **DECLINE, "toolCallId": w.ids["user_call_id"],
         "approval": {"id": str(w.ids["user_call"]), "approved": False, "reason": "\ud800"}}]}]}, "json"),
    ("ag-ui", "a decline reason with a lone surrogate or NUL",
     lambda w: {**AG_UI_EMPTY, "threadId": w.ids["waiting"], "resume": [{
         "interruptId": str(w.ids["user_call"]), "status": "resolved",
         "payload": {"approved": False, "reason": "\ud800"}}]}, "json"),
    ("ag-ui", "a runId with a lone surrogate",
     lambda w: {**AG_UI_EMPTY, "threadId": w.ids["conversation"], "runId": "\ud800",
                "messages": [{"id": "u1", "role": "user", "content": "Hello"}]}, "json"),
    ("ai-sdk/chat", "a file part without a file name",
     lambda w: {"id": w.ids["conversation"], "messages": [{"role": "user", "parts": [
         {"type": "text", "text": "See this"}, {"type": "file", "mediaType": "image/png", "url": PNG_URL}]}]}, "json"),
]  # fmt: skip
ENDPOINT = {e.name: e for e in ENDPOINTS}


@pytest.mark.parametrize(
    ("name", "reason", "body", "encoding"),
    [
        pytest.param(*case, marks=[pytest.mark.xfail(strict=True, reason="KNOWN_500")] if case[:2] in KNOWN_500 else [])
        for case in SMALLEST
    ],
    ids=[f"{name}: {reason}" for name, reason, _body, _encoding in SMALLEST],
)
def test_the_smallest_body_of_each_known_500(clients, alice, name, reason, body, encoding):
    world = World.make(alice)
    endpoint = ENDPOINT[name]
    sent = world.fill(body(world))
    assert SYMPTOMS[reason](Sent(sent, encoding))  # the entry recognises its own body
    path = endpoint.path.format(path=world.ids["user_call"])
    before = counts()
    headers = SSE if name == "ag-ui" else {}  # as AG-UI's clients ask
    answer = send(clients["owner"]["api"], endpoint.method, path, *encode(sent, encoding), headers)
    assert problem_of(answer, endpoint) is None
    if refused(answer, endpoint):
        assert counts() == before
