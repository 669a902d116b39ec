"""Attachments on the chat page in Chromium: pick a file, paste one, drop one, see its preview and progress,
have a refused one explained, and send them with a message the model then sees; on a phone width too."""

import pytest
from playwright.sync_api import expect

from tests.attachments import files
from tests.browser.helpers import CHAT, ask, no_horizontal_scroll, sign_in
from toolcalling.models import Attachment, Message

# Puts a file into the page's clipboard paste or drop, as a user's screenshot paste or file drop does.
DATA_TRANSFER = """([selector, kind, name, type, bytes]) => {
  const transfer = new DataTransfer();
  transfer.items.add(new File([new Uint8Array(bytes)], name, { type }));
  const target = document.querySelector(selector);
  if (kind === "paste") {
    target.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
  } else {
    for (const step of ["dragover", "drop"]) {
      target.dispatchEvent(new DragEvent(step, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }
  }
}"""


def transfer(page, kind: str, name: str, type_: str, data: bytes) -> None:
    page.evaluate(DATA_TRANSFER, [".tc-composer textarea" if kind == "paste" else ".tc-composer", kind, name,
                                  type_, list(data)])  # fmt: skip


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)
@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 844}])
def test_files_picked_pasted_and_dropped_go_with_the_message(live_server, browser, model, shop, viewport, tmp_path):
    model.reply("I see a screenshot, a small GIF and your invoice.")
    context = browser.new_context(viewport=viewport, is_mobile=viewport["width"] < 500)
    page = context.new_page()
    sign_in(page, live_server.url + CHAT)

    invoice = tmp_path / "invoice.pdf"
    invoice.write_bytes(files.PDF)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach a file").click()
    chooser.value.set_files(str(invoice))
    transfer(page, "paste", "screenshot.png", "image/png", files.PNG)
    transfer(page, "drop", "cat.gif", "image/gif", files.GIF)

    tray = page.locator(".tc-tray .tc-attachment")
    expect(tray).to_have_count(3)
    expect(page.locator(".tc-tray .tc-attachment[data-id]")).to_have_count(3)  # each upload has finished
    expect(page.locator(".tc-tray img.tc-thumb")).to_have_count(2)  # previews of the images
    if viewport["width"] < 500:
        assert no_horizontal_scroll(page)

    ask(page, "What did I send?")
    expect(page.locator(".tc-messages .tc-assistant").last).to_contain_text("your invoice", timeout=15_000)
    expect(page.locator(".tc-tray .tc-attachment")).to_have_count(0)
    sent = page.locator(".tc-messages .tc-user").last
    expect(sent.locator(".tc-files li")).to_have_count(3)
    expect(sent.locator("img.tc-thumb")).to_have_count(2)
    expect(sent.get_by_role("link", name="invoice.pdf")).to_be_visible()

    model.assert_done()  # the strict server found each part's bytes to be what it claimed
    (message,) = Message.objects.filter(role="user")
    assert sorted(a.name for a in message.attachments.all()) == ["cat.gif", "invoice.pdf", "screenshot.png"]
    # The page reloaded shows the same files with the message (from the history).
    page.reload()
    expect(page.locator(".tc-messages .tc-user").last.locator(".tc-files li")).to_have_count(3)
    # A thumbnail really loads: the image is served to its owner.
    assert page.evaluate(
        "Array.from(document.querySelectorAll('.tc-messages img.tc-thumb')).every(i => i.naturalWidth > 0)"
    )
    context.close()


@pytest.mark.toolcalling(EVENTS_KEEPALIVE=0.2)
def test_a_refused_file_is_explained_and_nothing_is_sent(live_server, browser, model, shop):
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, live_server.url + CHAT)
    transfer(page, "drop", "logo.png", "image/png", files.SVG)  # an SVG with a script, named as a PNG
    notice = page.locator(".tc-notice")
    expect(notice).to_contain_text("logo.png was not attached")
    expect(notice).to_contain_text("cannot be attached")
    expect(page.locator(".tc-tray .tc-attachment")).to_have_count(0)
    assert not Attachment.objects.exists()
    context.close()
