"""Attachments travel to the model as each API's own parts, with their bytes, and stay with their message in
later turns; tools read them through ``ctx.attachments``. The strict servers check every part's bytes."""

import base64
import json

import pytest

from tests.attachments import files
from tests.attachments.conftest import URL, upload
from toolcalling.models import Attachment

# The part types of a user's files on each API, image first, then document.
FILE_PARTS = {
    "chat_completions": ("image_url", "file"),
    "responses": ("input_image", "input_file"),
    "anthropic": ("image", "document"),
}


def user_contents(body: dict, api: str) -> list[list[dict]]:
    """The content parts of each user message of a raw request body, in order."""
    if api == "responses":
        items = [i for i in body["input"] if i.get("type", "message") == "message" and i["role"] == "user"]
    else:
        items = [m for m in body["messages"] if m["role"] == "user"]
    return [m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}] for m in items]


def part_bytes(part: dict, api: str) -> bytes:
    """The bytes a file part carries, from its base64."""
    if api == "anthropic":
        return base64.b64decode(part["source"]["data"])
    if api == "responses":
        url = part.get("image_url") or part.get("file_data")
    else:
        url = part["image_url"]["url"] if part["type"] == "image_url" else part["file"]["file_data"]
    return base64.b64decode(url.split(";base64,", 1)[1])


def send(api, conversation, content, ids):
    body = {"content": content, "attachments": ids}
    return api.post(URL + f"conversations/{conversation['id']}/messages/", body, format="json")


@pytest.mark.each_api
def test_each_api_sends_images_and_pdfs_as_its_own_parts_in_this_and_later_turns(api, model, model_api, conversation):
    image = upload(api, files.PNG).json()
    document = upload(api, files.PDF, name="invoice.pdf", content_type="application/pdf").json()
    model.reply("A receipt.")
    response = send(api, conversation, "What is this?", [image["id"], document["id"]])
    assert response.status_code == 201, response.content
    sent = response.json()["messages"][0]
    assert [a["id"] for a in sent["attachments"]] == [image["id"], document["id"]]
    assert sent["attachments"][1] == {**document, "name": "invoice.pdf"}

    model.reply("Still a receipt.")
    assert send(api, conversation, "And now?", []).status_code == 201
    model.assert_done()  # the strict server found every part well-formed, decodable and of its claimed type
    image_type, document_type = FILE_PARTS[model_api]
    for body in model.requests:  # the first turn, and the second: the files stay with their message
        first = user_contents(body, model_api)[0]
        kinds = [p["type"] for p in first]
        assert kinds.count(image_type) == 1 and kinds.count(document_type) == 1, first
        found = {p["type"]: part_bytes(p, model_api) for p in first if p["type"] in (image_type, document_type)}
        assert found == {image_type: files.PNG, document_type: files.PDF}
    # The first question is sent once, with both files; the second carries none.
    assert len(user_contents(model.requests[-1], model_api)) == 2
    assert [p["type"] for p in user_contents(model.requests[-1], model_api)[-1]] == ["text"]
    history = api.get(URL + f"conversations/{conversation['id']}/messages/").json()
    assert [len(m["attachments"]) for m in history] == [2, 0, 0, 0]


@pytest.mark.each_api
def test_the_strict_server_refuses_a_part_whose_bytes_are_not_its_type(api, model, model_api, conversation):
    """An upload whose row was changed to claim an image while its bytes are a PDF: the server says so."""
    document = upload(api, files.PDF, name="a.pdf").json()
    Attachment.objects.filter(pk=document["id"]).update(content_type="image/png")
    model.reply("never sent")
    response = send(api, conversation, "Look", [document["id"]])
    assert response.status_code == 502, response.content
    assert response.json()["code"] == "model_error"
    assert model.rejected and any("image" in e for e in model.rejected[0].errors)


@pytest.mark.toolcalling()
def test_a_tool_reads_the_conversations_files_through_ctx_attachments(api, model, alice):
    conversation = api.post(URL + "conversations/", {"assistant": "files"}, format="json").json()
    image = upload(api, files.GIF, name="cat.gif", content_type="image/gif").json()
    model.call("attached_files", {})
    model.reply("One GIF.")
    assert send(api, conversation, "Which files?", [image["id"]]).status_code == 201
    model.assert_done()
    result = json.loads(model.messages()[-1]["content"])
    assert result == [{"name": "cat.gif", "type": "image/gif", "size": len(files.GIF), "head": files.GIF[:8].hex()}]


def test_memory_budgets_count_an_estimate_not_the_base64(api, model, conversation):
    from toolcalling.model_apis import FilePart, ImagePart, UserMessage
    from toolcalling.storage import size

    big = files.PDF + b"%" * (500 * 1024)
    part = FilePart("data:application/pdf;base64," + base64.b64encode(big).decode(), "a.pdf")
    image = ImagePart("data:image/png;base64," + "A" * 4_000_000)
    estimated = size(UserMessage("hi", [part, image]))
    # 11 pages of a PDF (one per 50 KB) and one image at 1,600 tokens each, and a few for the text.
    assert 12 * 1600 <= estimated < 12 * 1600 + 50
