"""On a Korean site the chat page is Korean in a real browser, the sentences chat.js writes while the page runs
included: they come from the page's translated catalogue.

The live server's middleware is loaded once, so the site's language is its ``LANGUAGE_CODE`` here (the API's
tests cover ``LocaleMiddleware`` and Accept-Language)."""

import pytest
from django.conf import settings
from django.test import Client, override_settings
from playwright.sync_api import expect

from toolcalling.testutils import override_toolcalling


@pytest.fixture
def korean_site():
    # A short limit lets the page refuse a long message by itself; short keepalives end its streams with the test.
    with override_settings(LANGUAGE_CODE="ko"), override_toolcalling(MAX_MESSAGE_LENGTH=20, EVENTS_KEEPALIVE=0.2):
        yield


def test_a_korean_browser_gets_the_chat_and_its_script_in_korean(live_server, browser, alice, korean_site):
    signed_in = Client()
    signed_in.force_login(alice)
    context = browser.new_context(locale="ko-KR")
    cookie = signed_in.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}])
    page = context.new_page()
    try:
        page.goto(live_server.url + "/chat/helper/")
        page.wait_for_function("() => Boolean(document.querySelector('.tc-chat')?.toolcallingChat)")
        # The template's words.
        expect(page.get_by_role("button", name="보내기")).to_be_visible()
        box = page.get_by_label("메시지 입력")
        expect(box).to_have_attribute("placeholder", "Helper에게 메시지 보내기")

        # chat.js names a new conversation from the catalogue.
        page.get_by_role("button", name="새 대화").click()
        expect(page.locator(".tc-list .tc-conversation")).to_have_text("새 대화")

        # chat.js counts the characters and refuses a message over the limit, in Korean, without sending it.
        box.fill("가" * 30)
        expect(page.locator(".tc-counter")).to_have_text("20자 중 30자")
        box.press("Enter")
        expect(page.locator(".tc-notice[role=alert]")).to_have_text(
            "메시지가 30자로, 허용된 20자보다 깁니다. 줄인 뒤 다시 보내 주세요."
        )
        expect(box).to_have_value("가" * 30)
    finally:
        context.close()
