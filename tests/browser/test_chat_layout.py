"""The chat page on a phone with many conversations, and a site's own DRF pagination with "more"."""

import pytest
from playwright.sync_api import expect
from rest_framework.pagination import PageNumberPagination

from tests.browser.helpers import (
    CHAT,
    no_horizontal_scroll,
    short_keepalive,  # noqa: F401  (a fixture, used by name below)
    sign_in,
)
from toolcalling.api.views import ConversationViewSet
from toolcalling.models import Conversation, Message

pytestmark = pytest.mark.usefixtures("short_keepalive")


def conversations(user, count: int, assistant: str = "shop") -> list[Conversation]:
    made = []
    for number in range(count):
        title = f"Where is my order 2025{number:04d}-0032 and when will it arrive at my door, please?"
        made.append(Conversation.objects.create(user=user, assistant_id=assistant, title=title))
    return made


def test_a_phone_never_scrolls_sideways_with_twenty_conversations(live_server, browser, shop):
    (latest, *_) = conversations(shop, 20)[::-1]
    # A long unbroken word in a message must not widen the page either.
    Message.objects.create(conversation=latest, role="user", content="tracking:" + "X" * 300)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    sign_in(page, live_server.url + CHAT)
    expect(page.locator(".tc-conversation")).to_have_count(20)
    expect(page.locator(".tc-messages .tc-user")).to_contain_text("tracking:XXXX")

    assert no_horizontal_scroll(page)
    send = page.get_by_role("button", name="Send").bounding_box()
    box = page.get_by_label("Your message").bounding_box()
    assert send["x"] >= 0 and send["x"] + send["width"] <= 390
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    # The conversations scroll sideways inside their own row, and every one can be reached.
    page.locator(".tc-conversation").last.click()
    expect(page.locator(".tc-conversation").last).to_have_attribute("aria-current", "true")
    assert no_horizontal_scroll(page)
    context.close()


class FivePerPage(PageNumberPagination):
    """What DEFAULT_PAGINATION_CLASS = PageNumberPagination with PAGE_SIZE = 5 gives a site's views."""

    page_size = 5


@pytest.fixture
def paginated_site(monkeypatch):
    # DRF binds a view's pagination_class when the class is defined, so override_settings cannot reach it.
    monkeypatch.setattr(ConversationViewSet, "pagination_class", FivePerPage)


def test_the_conversation_list_follows_the_sites_pagination_with_more(live_server, browser, shop, paginated_site):
    mine = conversations(shop, 12)
    conversations(shop, 4, assistant="helper")  # another assistant's: not on this page at all
    page = browser.new_page()
    sign_in(page, live_server.url + CHAT)
    listed = page.locator(".tc-conversation")
    more = page.get_by_role("button", name="More conversations")
    expect(listed).to_have_count(5)
    more.click()
    expect(listed).to_have_count(10)
    more.click()
    expect(listed).to_have_count(12)
    expect(more).to_be_hidden()
    shown = {listed.nth(i).get_attribute("data-id") for i in range(12)}
    assert shown == {str(c.pk) for c in mine}
    page.close()
