"""What one model request carries of a conversation's files: the newest ones that fit ``MAX_PER_REQUEST`` and
``MAX_BYTES_PER_REQUEST``, a text stub for each older one, each file read from storage at most once per turn; a
message whose own files could never fit is refused before anything is stored."""

import pytest
from django.test import override_settings

from tests.attachments import files
from tests.attachments.conftest import URL, upload
from tests.attachments.storage import ALIAS, STORAGES, CountingStorage
from tests.attachments.test_model_parts import FILE_PARTS, part_bytes, user_contents
from toolcalling.models import Attachment, Message


@pytest.fixture
def opened():
    """Opens of each stored file, by its user's file name, counted from the moment it is read."""
    with override_settings(STORAGES=STORAGES):
        CountingStorage.opened.clear()

        def by_name() -> dict[str, int]:
            names = dict(Attachment.objects.values_list("storage_name", "name"))
            return {names[stored]: count for stored, count in CountingStorage.opened.items() if stored in names}

        yield by_name


def send(api, conversation, content, *uploads):
    ids = [u["id"] for u in uploads]
    response = api.post(URL + f"conversations/{conversation['id']}/messages/",
                        {"content": content, "attachments": ids}, format="json")  # fmt: skip
    assert response.status_code == 201, response.content
    return response


def answers(model, turns: int) -> None:
    """One plain answer for each of the next ``turns`` turns."""
    for n in range(turns):
        model.reply(f"answer {n + 1}")


def pdf(api, name):
    return upload(api, files.PDF, name=name, content_type="application/pdf").json()


def what_each_user_message_carries(body: dict, api: str) -> list[list[str]]:
    """Per user message: its text, the file name of each stub, and the type and bytes of each file part."""
    image_type, document_type = FILE_PARTS[api]
    carried = []
    for content in user_contents(body, api):
        seen = []
        for part in content:
            if part["type"] in (image_type, document_type):
                seen.append(f"file {part_bytes(part, api)[:4]!r}")
            else:
                seen.append(part["text"])
        carried.append(seen)
    return carried


@pytest.mark.each_api
@pytest.mark.toolcalling(ATTACHMENTS={"STORAGE": ALIAS, "MAX_PER_MESSAGE": 2, "MAX_PER_REQUEST": 2})
def test_a_request_carries_the_newest_files_and_a_stub_for_each_older_one(api, model, model_api, conversation, opened):
    answers(model, 3)
    send(api, conversation, "first", upload(api, files.PNG, name="oldest.png").json())
    send(api, conversation, "second", pdf(api, "older.pdf"))
    CountingStorage.opened.clear()
    send(api, conversation, "third", upload(api, files.GIF, name="newest.gif").json())
    model.assert_done()  # every request, stubs and all, is one the API accepts

    stub = "[File oldest.png (image/png, 70 B) was attached here; it is not sent again in this request.]"
    assert what_each_user_message_carries(model.requests[-1], model_api) == [
        ["first", stub],
        ["second", "file b'%PDF'"],
        ["third", "file b'GIF8'"],
    ]
    # The file left out was not read at all; each sent one once, in this turn.
    assert opened() == {"older.pdf": 1, "newest.gif": 1}


@pytest.mark.each_api
@pytest.mark.toolcalling(
    ATTACHMENTS={"MAX_BYTES": len(files.PDF), "MAX_BYTES_PER_REQUEST": len(files.PDF) + len(files.PNG)}
)
def test_the_bytes_one_request_carries_are_bounded_newest_first(api, model, model_api, conversation):
    answers(model, 3)
    send(api, conversation, "first", upload(api, files.GIF, name="first.gif").json())
    send(api, conversation, "second", pdf(api, "second.pdf"))
    send(api, conversation, "third", upload(api, files.PNG, name="third.png").json())
    model.assert_done()
    # The PNG and the PDF fill the budget; the GIF, older, does not fit beside them, however small.
    first = f"[File first.gif (image/gif, {len(files.GIF)} B) was attached here; it is not sent again in this request.]"
    assert what_each_user_message_carries(model.requests[-1], model_api) == [
        ["first", first],
        ["second", "file b'%PDF'"],
        ["third", "file b'\\x89PNG'"],
    ]
    # Each earlier request carried everything it had, as it all fitted.
    assert what_each_user_message_carries(model.requests[1], model_api) == [
        ["first", "file b'GIF8'"],
        ["second", "file b'%PDF'"],
    ]


@pytest.mark.each_api
@pytest.mark.toolcalling(ATTACHMENTS={"STORAGE": ALIAS})
def test_each_file_is_read_from_storage_at_most_once_per_turn(api, model, model_api, conversation, opened):
    """On the default bounds: the new message's files and the history's, each once, whether the turn asks the
    model once or again after a tool call."""
    model.reply("1")
    send(api, conversation, "first", upload(api, files.PNG, name="a.png").json())
    assert opened() == {"a.png": 1}
    CountingStorage.opened.clear()
    model.call("add", {"a": 1, "b": 2})  # the model is asked twice in this turn
    model.reply("3")
    send(api, conversation, "second", pdf(api, "b.pdf"), upload(api, files.GIF, name="c.gif").json())
    model.assert_done()
    assert len(model.requests) == 3
    assert opened() == {"a.png": 1, "b.pdf": 1, "c.gif": 1}


@pytest.mark.toolcalling(ATTACHMENTS={"STORAGE": ALIAS})
def test_a_turn_run_from_python_reads_each_file_once(model, alice, opened):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from toolcalling import Assistant
    from toolcalling.attachments import store

    assistant = Assistant.get("helper")
    answers(model, 2)
    first = assistant.run(alice, "first", attachments=[store(SimpleUploadedFile("a.png", files.PNG), alice)])
    CountingStorage.opened.clear()
    second = store(SimpleUploadedFile("b.pdf", files.PDF), alice)
    assistant.run(alice, "second", first.conversation, attachments=[second])
    model.assert_done()
    assert opened() == {"a.png": 1, "b.pdf": 1}


@pytest.mark.toolcalling(
    ATTACHMENTS={"MAX_BYTES": len(files.PDF), "MAX_BYTES_PER_REQUEST": len(files.PDF) + len(files.PNG)}
)
def test_a_message_whose_files_could_never_be_sent_together_is_refused(api, model, conversation):
    ids = [pdf(api, "a.pdf")["id"], upload(api, files.PNG).json()["id"], upload(api, files.GIF).json()["id"]]
    response = api.post(URL + f"conversations/{conversation['id']}/messages/",
                        {"content": "all three", "attachments": ids}, format="json")  # fmt: skip
    assert response.status_code == 413, response.content
    body = response.json()
    assert body["code"] == "attachment_too_large" and body["status"] == "idle"
    assert "261 B" in body["detail"], body
    assert not Message.objects.exists() and Attachment.objects.filter(message__isnull=True).count() == 3
    model.assert_done()  # the model was not asked


@pytest.mark.toolcalling(ATTACHMENTS={"STORAGE": "short_reads"})
def test_a_file_read_in_short_pieces_is_sent_whole(model, model_api, alice):
    """A storage may give fewer bytes than asked (a streamed object store does): the base64 is still the file's."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from toolcalling import Assistant
    from toolcalling.attachments import store

    data = files.PDF + bytes(range(256)) * 40  # 10,431 bytes: no read of 1,000 ends on a multiple of 3
    with override_settings(STORAGES=STORAGES):
        document = store(SimpleUploadedFile("long.pdf", data), alice)
        model.reply("Read.")
        Assistant.get("helper").run(alice, "Read this", attachments=[document])
    model.assert_done()
    (content,) = user_contents(model.last_request, model_api)
    assert [part_bytes(p, model_api) for p in content[1:]] == [data]
