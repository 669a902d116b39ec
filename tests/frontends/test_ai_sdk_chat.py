"""The AI SDK's own chat client (AbstractChat + DefaultChatTransport, run by node) against the live site: text,
tool parts, errors, regeneration and another user's conversation. Every chunk passed the SDK's own schema."""

import base64

import httpx2
import pytest

from tests.attachments import files
from tests.attachments.test_model_parts import FILE_PARTS, part_bytes, user_contents
from toolcalling.models import Attachment, Conversation, Message, ToolCall

from .conftest import chunk_types, parts


@pytest.mark.each_api
def test_a_text_answer_reaches_the_chat_as_it_is_stored(chat, model, conv):
    model.reply("Hello from the shop, how can I help?")
    reply = chat(conv)("send", text="Hi there")

    assert reply["status"] == "ready" and reply["error"] is None
    stored = list(Message.objects.filter(conversation=conv).order_by("id"))
    assert [(m.role, m.content) for m in stored] == [("user", "Hi there"),
                                                     ("assistant", "Hello from the shop, how can I help?")]  # fmt: skip
    assert [m["role"] for m in reply["messages"]] == ["user", "assistant"]
    assert [p["text"] for p in parts(reply, "text")] == ["Hello from the shop, how can I help?"]
    types = chunk_types(reply)
    assert types[:2] == ["start", "start-step"] and types[-2:] == ["finish-step", "finish"]
    assert types.count("text-delta") > 1  # streamed in pieces, as the model sent them
    assert reply["chunks"][-1]["finishReason"] == "stop"
    assert reply["messages"][-1]["metadata"] == {"toolcalling": {"conversation": str(conv.pk), "status": "idle"}}
    model.assert_done()


@pytest.mark.each_api
def test_a_tool_call_and_its_output_are_parts_of_the_answer(chat, model, conv):
    answer = model.call("add", {"a": 2, "b": 3})
    model.reply("Two and three make five.")
    reply = chat(conv)("send", text="What is 2 + 3?")

    assert reply["status"] == "ready", reply
    (tool,) = parts(reply, "tool-add")
    assert tool["toolCallId"] == answer.tool_calls[0].id
    assert (tool["state"], tool["input"], tool["output"]) == ("output-available", {"a": 2, "b": 3}, 5)
    assert tool["title"] == "Add"
    assert parts(reply, "text")[-1]["text"] == "Two and three make five."
    # One step per model call: the call's, then the answer's.
    assert chunk_types(reply).count("start-step") == 2 == chunk_types(reply).count("finish-step")
    assert [p["type"] for p in reply["messages"][-1]["parts"]].count("step-start") == 2
    model.assert_done()


def test_a_failing_model_is_an_error_with_the_apps_code(chat, model, conv):
    model.error(500, "The engine is on fire.")
    reply = chat(conv)("send", text="hello")

    assert reply["status"] == "error"
    assert "engine is on fire" in reply["error"]
    (error,) = [c for c in reply["chunks"] if c["type"] == "error"]
    assert error["code"] == "model_error"
    conv.refresh_from_db()
    assert conv.status == "failed"


def test_regenerate_asks_again_for_the_last_user_message(chat, model, conv):
    model.reply("First answer.")
    model.reply("Second answer.")
    driver = chat(conv)
    driver("send", text="Tell me something")
    reply = driver("regenerate")

    assert reply["status"] == "ready"
    assert [p["text"] for p in parts(reply, "text")] == ["Second answer."]
    # The question is asked again; nothing stored is deleted (the first answer stays in the record).
    stored = [(m.role, m.content) for m in Message.objects.filter(conversation=conv).order_by("id")]
    assert stored == [("user", "Tell me something"), ("assistant", "First answer."),
                      ("user", "Tell me something"), ("assistant", "Second answer.")]  # fmt: skip
    model.assert_done()


def test_another_users_conversation_is_a_404_and_nothing_is_stored(chat, model, bob):
    theirs = Conversation.objects.create(user=bob, assistant_id="helper")
    reply = chat(theirs)("send", text="Show me bob's chat")

    assert reply["status"] == "error"
    assert '"code":"not_found"' in reply["error"].replace(" ", "")
    assert not Message.objects.filter(conversation=theirs).exists()
    assert model.requests == []


def test_a_chat_id_that_is_no_conversation_is_a_404(live_server, model, alice):
    url = f"{live_server.url}/api/toolcalling/ai-sdk/chat"
    body = {"id": "not-a-uuid", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
            "trigger": "submit-message"}  # fmt: skip
    with httpx2.Client(auth=("alice", "pw"), timeout=10) as client:
        assert client.post(url, json=body).status_code == 404
        assert client.get(f"{url}/not-a-uuid/stream").status_code == 404
    with httpx2.Client(timeout=10) as anonymous:
        assert anonymous.post(url, json=body).status_code in (401, 403)
    assert not Message.objects.exists()


def test_the_stream_says_its_protocol_and_resuming_an_idle_chat_is_a_204(live_server, model, conv):
    model.reply("Fine.")
    url = f"{live_server.url}/api/toolcalling/ai-sdk/chat"
    body = {"id": str(conv.pk), "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "ok?"}]}],
            "trigger": "submit-message", "messageId": None}  # fmt: skip
    with httpx2.Client(auth=("alice", "pw"), timeout=30) as client:
        response = client.post(url, json=body)
        assert response.status_code == 200
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.text.rstrip().endswith("data: [DONE]")
        resumed = client.get(f"{url}/{conv.pk}/stream")
        assert resumed.status_code == 204
    model.assert_done()


def test_under_asgi_the_chat_gets_the_same_parts(chat, asgi_url, model, conv):
    # Under ASGI the chunks' database reads run off the event loop, as Django runs the ORM from async code.
    model.call("add", {"a": 20, "b": 22})
    model.reply("Forty-two.")
    reply = chat(conv, base=asgi_url)("send", text="20 + 22?")

    assert reply["status"] == "ready", reply
    (tool,) = parts(reply, "tool-add")
    assert (tool["input"], tool["output"]) == ({"a": 20, "b": 22}, 42)
    assert parts(reply, "text")[-1]["text"] == "Forty-two."
    with httpx2.Client(auth=("alice", "pw"), timeout=10) as client:
        assert client.get(f"{asgi_url}/api/toolcalling/ai-sdk/chat/{conv.pk}/stream").status_code == 204
    model.assert_done()


def test_a_failing_tool_is_an_output_error_and_a_direct_result_is_text(chat, model, conv):
    model.call("explode", {})
    model.reply("The tool failed, sorry.")
    model.call("direct_answer", {"text": "Straight from the tool."})
    driver = chat(conv)
    failed = driver("send", text="Try the tool")
    direct = driver("send", text="Answer directly")

    (part,) = parts(failed, "tool-explode")
    assert part["state"] == "output-error" and part["errorText"] == ToolCall.objects.get(name="explode").error
    # A return_direct result is the reply without a second model call: its text comes whole, not as deltas.
    assert parts(direct, "text")[-1]["text"] == "DIRECT: Straight from the tool."
    assert Message.objects.filter(conversation=conv).order_by("id").last().content == "DIRECT: Straight from the tool."
    model.assert_done()


def data_url(content: bytes, media_type: str) -> str:
    return f"data:{media_type};base64," + base64.b64encode(content).decode()


@pytest.mark.each_api
def test_files_the_user_picks_become_the_messages_attachments_and_reach_the_model(chat, model, model_api, conv):
    model.reply("A tiny picture and an invoice.")
    picked = [
        {"type": "file", "mediaType": "image/png", "filename": "dot.png", "url": data_url(files.PNG, "image/png")},
        {"type": "file", "mediaType": "application/pdf", "filename": "invoice.pdf",
         "url": data_url(files.PDF, "application/pdf")},
    ]  # fmt: skip
    reply = chat(conv)("send", text="What are these?", files=picked)

    assert reply["status"] == "ready" and reply["error"] is None, reply
    question = Message.objects.get(conversation=conv, role="user")
    stored = list(Attachment.objects.filter(message=question).order_by("created_at", "id"))
    assert [(a.name, a.content_type, a.size) for a in stored] == [
        ("dot.png", "image/png", len(files.PNG)),
        ("invoice.pdf", "application/pdf", len(files.PDF)),
    ]
    model.assert_done()  # the strict server decoded each part and found the type it claims
    (content,) = user_contents(model.requests[0], model_api)
    assert [part["type"] for part in content][1:] == list(FILE_PARTS[model_api])
    assert [part_bytes(part, model_api) for part in content[1:]] == [files.PNG, files.PDF]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/secret.png",  # never fetched by the server
        data_url(files.SVG, "image/png"),  # a script in an SVG, whatever the part claims
        "data:image/png;base64,not base64!",
    ],
)
def test_a_file_part_the_app_refuses_stores_nothing_and_tells_the_chat(chat, model, conv, url):
    part = {"type": "file", "mediaType": "image/png", "filename": "x.png", "url": url}
    reply = chat(conv)("send", text="Look", files=[part])

    assert reply["status"] == "error" and "unsupported_attachment" in reply["error"], reply
    assert not Message.objects.filter(conversation=conv).exists()
    assert not Attachment.objects.exists()
    assert model.requests == []
