"""Files in later turns under the memory policies: ``"final"`` keeps them with their question; a token budget
counts them by estimate and drops the turn they came with when it does not fit."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.attachments import files
from toolcalling import Assistant
from toolcalling.attachments import store


def kinds(message: dict) -> list[str]:
    content = message["content"]
    return [p["type"] for p in content] if isinstance(content, list) else ["text"]


@pytest.mark.chat_completions  # reads Chat Completions' parts
def test_final_memory_keeps_the_files_with_their_question(model, alice):
    image = store(SimpleUploadedFile("shot.png", files.PNG), alice)
    model.call("attached_files", {})
    model.reply("a1: one PNG")
    model.reply("a2: yes")
    assistant = Assistant.get("files_final")
    first = assistant.run(alice, "q1: what is this?", attachments=[image])
    assistant.run(alice, "q2: sure?", first.conversation)
    model.assert_done()
    later = model.messages()[1:]
    # The first turn as its question (with the image) and its final answer; its tool call and result are gone.
    assert [(m["role"], kinds(m)) for m in later] == [
        ("user", ["text", "image_url"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
    ]


@pytest.mark.chat_completions  # reads Chat Completions' parts
def test_a_token_budget_counts_a_file_by_estimate_and_drops_its_turn(model, alice):
    image = store(SimpleUploadedFile("shot.png", files.PNG), alice)
    model.reply("a1")
    model.reply("a2")
    assistant = Assistant.get("files_budget")
    first = assistant.run(alice, "q1", attachments=[image])
    assistant.run(alice, "q2", first.conversation)
    model.assert_done()
    # The first request had the image (the current turn always goes whole); the second left that turn out,
    # though the PNG's base64 is a few dozen characters: it counts as an image, 1,600 tokens.
    assert [kinds(m) for m in model.messages(0)[1:]] == [["text", "image_url"]]
    assert [(m["role"], m["content"]) for m in model.messages(1)[1:]] == [("user", "q2")]
