"""The frontends' endpoints refuse malformed bodies in the app's shapes, never with a 500 or a broken stream: odd
``parts``, JSON nested too deep, decisions the REST API would refuse, run ids that cannot be sent back, file parts
without a usable name, and files carried by a message that is refused."""

import base64
import json

import httpx2
import pytest

from tests.approvalapp.models import Counter
from tests.attachments import files
from tests.attachments.conftest import stored_files
from toolcalling.models import Attachment, Conversation, Message, ToolCall

AUTH = ("alice", "pw")
DEEP = "[" * 100_000 + "]" * 100_000


def chat_url(live_server):
    return f"{live_server.url}/api/toolcalling/ai-sdk/chat"


def agui_url(live_server):
    return f"{live_server.url}/api/toolcalling/ag-ui/"


def post_json(url, body, **headers):
    """``body`` as JSON with ASCII escapes, so a lone surrogate travels as ``\\ud800``, as browsers send it."""
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        return client.post(url, content=json.dumps(body), headers={"Content-Type": "application/json", **headers})


def chat_body(conversation, message, **extra):
    return {"id": str(conversation.pk), "messages": [message], "trigger": "submit-message", **extra}


def user_message(text, *more_parts):
    return {"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}, *more_parts]}


def png_part(**fields):
    url = "data:image/png;base64," + base64.b64encode(files.PNG).decode()
    return {"type": "file", "mediaType": "image/png", "url": url, **fields}


def agui_body(conversation, text="", **extra):
    return {"threadId": str(conversation.pk), "runId": "run-1", "state": {}, "context": [], "forwardedProps": {},
            "messages": [{"id": "u1", "role": "user", "content": text}], "tools": [], **extra}  # fmt: skip


@pytest.fixture
def ops(alice) -> Conversation:
    return Conversation.objects.create(user=alice, assistant_id="ops")


@pytest.fixture
def waiting(live_server, model, ops) -> ToolCall:
    """A call of alice's own conversation that she confirms or declines herself (``approver="user"``)."""
    model.call("move_points", {"name": "alice", "points": 5})
    response = post_json(chat_url(live_server), chat_body(ops, user_message("Give me five points")))
    assert response.status_code == 200, response.text
    call = ToolCall.objects.get(conversation=ops)
    assert (call.status, call.approver) == ("awaiting_approval", "user")
    return call


def declined_through_the_sdk(live_server, call, reason):
    part = {"type": "tool-move_points", "toolCallId": call.call_id, "state": "approval-responded",
            "approval": {"id": str(call.pk), "approved": False, "reason": reason}}  # fmt: skip
    message = {"id": "a1", "role": "assistant", "parts": [part]}
    return post_json(chat_url(live_server), chat_body(call.conversation, message))


def declined_through_ag_ui(live_server, call, reason):
    resume = [{"interruptId": str(call.pk), "status": "resolved", "payload": {"approved": False, "reason": reason}}]
    return post_json(agui_url(live_server), agui_body(call.conversation, runId="run-2", resume=resume))


# Defect 2: parts that are no list ------------------------------------------------------------------------------


@pytest.mark.parametrize("parts", [1, True], ids=["a-number", "true"])
def test_parts_that_are_no_list_are_a_400_in_drfs_shape(live_server, model, conv, parts):
    response = post_json(chat_url(live_server), chat_body(conv, {"id": "m1", "role": "user", "parts": parts}))

    assert response.status_code == 400, response.text
    assert response.json()["messages"] == ["The last message's parts must be a list."]
    assert not Message.objects.exists()
    assert model.requests == []


# Defect 3: JSON nested too deep in a form ------------------------------------------------------------------------


def test_form_encoded_messages_nested_too_deep_are_a_400(live_server, model, conv):
    with httpx2.Client(auth=AUTH, timeout=30) as client:
        response = client.post(chat_url(live_server), data={"id": str(conv.pk), "messages": DEEP})

    assert response.status_code == 400, response.text[:300]
    assert response.json() == {"messages": ["The JSON is nested too deeply."]}
    assert not Message.objects.exists()


# Defects 4 and 5: a decline the REST API would refuse --------------------------------------------------------------


BAD_REASONS = {
    "a-lone-surrogate": ("Not \ud800 now", "Surrogate characters are not allowed: U+D800."),
    "a-nul": ("Not\x00now", "Null characters are not allowed."),
    "too-long": ("x" * 200_000, "The reason is too long: it may have at most 2000 characters."),
}


@pytest.mark.parametrize("way", [declined_through_the_sdk, declined_through_ag_ui], ids=["ai-sdk", "ag-ui"])
@pytest.mark.parametrize("bad", BAD_REASONS.values(), ids=BAD_REASONS.keys())
def test_a_decline_with_a_reason_rest_refuses_is_a_400_and_the_call_still_waits(live_server, model, waiting, way, bad):
    reason, refusal = bad
    response = way(live_server, waiting, reason)

    assert response.status_code == 400, response.text[:300]
    assert response.json() == {"reason": [refusal]}
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision_reason) == ("awaiting_approval", "")
    # The same reason through REST: the same answer, from the same validation.
    rest = post_json(f"{live_server.url}/api/toolcalling/tool-calls/{waiting.pk}/reject/", {"reason": reason})
    assert (rest.status_code, rest.json()) == (400, {"reason": [refusal]})
    # A reason within the rules still declines it, and the model is told.
    model.reply("Understood, nothing moved.")
    assert way(live_server, waiting, "  not now  ").status_code == 200
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision_reason) == ("rejected", "not now")
    assert not Counter.objects.filter(name="alice").exists()
    model.assert_done()


# Defect 6: a run id that cannot be sent back ---------------------------------------------------------------------


def test_an_ag_ui_run_id_with_a_lone_surrogate_is_a_400_before_anything_runs(live_server, model, conv):
    response = post_json(agui_url(live_server), agui_body(conv, "hi", runId="run-\ud800"))

    assert response.status_code == 400, response.text[:300]
    assert response.json() == {"input": ["runId: Surrogate characters are not allowed: U+D800."]}
    assert not Message.objects.exists()
    assert model.requests == []


# Defect 7: file parts without a usable name -------------------------------------------------------------------------


@pytest.mark.parametrize("fields", [{}, {"filename": None}, {"filename": ""}], ids=["absent", "null", "empty"])
def test_a_file_part_without_a_filename_is_named_by_its_type(live_server, model, conv, fields):
    model.reply("A tiny picture.")
    response = post_json(chat_url(live_server), chat_body(conv, user_message("What is this?", png_part(**fields))))

    assert response.status_code == 200, response.text[:300]
    (attachment,) = Attachment.objects.all()
    assert (attachment.name, attachment.content_type) == ("attachment.png", "image/png")
    assert attachment.message == Message.objects.get(conversation=conv, role="user")
    model.assert_done()


@pytest.mark.parametrize("filename", [".", "..", "photos/.."])
def test_a_file_part_named_no_file_is_the_apps_400_and_stores_nothing(live_server, model, conv, filename):
    response = post_json(chat_url(live_server), chat_body(conv, user_message("Look", png_part(filename=filename))))

    assert response.status_code == 400, response.text[:300]
    body = response.json()
    assert body["code"] == "unsupported_attachment"
    assert body["detail"] == f"A file's name cannot be {filename!r}: name the file, or leave the name out."
    assert not Attachment.objects.exists() and not Message.objects.exists()
    assert model.requests == []


# Defect 10: a refused message keeps none of its files ------------------------------------------------------------


def test_a_message_refused_as_busy_stores_none_of_its_files(live_server, model, conv):
    before = stored_files()
    Conversation.objects.filter(pk=conv.pk).update(status="running")
    response = post_json(chat_url(live_server), chat_body(conv, user_message("Look", png_part(filename="a.png"))))

    assert response.status_code == 409 and response.json()["code"] == "conversation_busy"
    assert not Attachment.objects.exists()
    assert stored_files() == before


@pytest.mark.toolcalling(USAGE_LIMITS=[{"turns": 1, "per": "user", "period": "day"}])
def test_a_message_refused_by_a_usage_limit_stores_none_of_its_files(live_server, model, conv):
    model.reply("The one answer of today.")
    assert post_json(chat_url(live_server), chat_body(conv, user_message("first"))).status_code == 200
    before = stored_files()
    response = post_json(chat_url(live_server), chat_body(conv, user_message("Look", png_part(filename="a.png"))))

    assert response.status_code == 429 and response.json()["code"] == "usage_limit_exceeded"
    assert not Attachment.objects.exists()
    assert stored_files() == before
    model.assert_done()


def test_the_files_of_a_message_that_was_taken_stay(live_server, model, conv):
    before = stored_files()
    model.reply("A tiny picture.")
    response = post_json(chat_url(live_server), chat_body(conv, user_message("Look", png_part(filename="a.png"))))

    assert response.status_code == 200
    (attachment,) = Attachment.objects.all()
    assert attachment.message is not None and len(stored_files()) == len(before) + 1
    model.assert_done()
