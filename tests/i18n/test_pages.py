"""With ``LANGUAGE_CODE = "ko"`` (or ``"de"``) the approval desk and the chat page show none of the app's English
strings: every msgid of the catalog is looked for in what the pages show, the chat's script catalogue included."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.template import Context, Template
from django.test import RequestFactory, override_settings

from tests.i18n.catalog import LANGUAGES, english_left
from tests.i18n.conftest import logged_in, site_data

CHANGELIST = "/admin/toolcalling/toolcall/"
# Words each page must show in its language: proof that the page was translated, not just empty of English.
SAMPLES = {
    "ko": {"desk": "스태프의 결정을 기다리는 도구 호출", "call": "승인", "chat": "보내기", "stats": "도구 통계"},
    "de": {"desk": "Mitarbeiters warten", "call": "Genehmigen", "chat": "Senden", "stats": "Tool-Statistik"},
}


def assert_no_english(html: str, language: str, page: str) -> None:
    left = english_left(html, language, site_data())
    assert not left, f"English strings of the app on {page} in {language!r}: {left}"


def render_chat(user) -> str:
    request = RequestFactory().get("/")
    request.user = user
    source = '{% load toolcalling %}{% toolcalling_chat "helper" examples="1 + 2?" %}'
    return Template(source).render(Context({"request": request, "csrf_token": "token"}))


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_desk_shows_no_english_strings_of_the_app(language, approver, desk):
    waiting, ran = desk["waiting"], desk["ran"]
    staff = logged_in(approver)
    with override_settings(LANGUAGE_CODE=language, USE_I18N=True):
        pages = {
            "the admin index": staff.get("/admin/"),
            "the desk": staff.get(CHANGELIST),
            "every call": staff.get(CHANGELIST + "?status=all"),
            "the waiting call": staff.get(f"{CHANGELIST}{waiting.pk}/change/"),
            "the call that ran": staff.get(f"{CHANGELIST}{ran.pk}/change/"),
            "reject's reason": staff.post(CHANGELIST, {"action": "reject_selected", "_selected_action": [waiting.pk]}),
            "the statistics": staff.get(CHANGELIST + "stats/"),
        }
        for name, response in pages.items():
            assert response.status_code == 200, (name, response.status_code)
            assert_no_english(response.content.decode(), language, name)
        assert SAMPLES[language]["desk"] in pages["the desk"].content.decode()
        assert SAMPLES[language]["call"] in pages["the waiting call"].content.decode()
        assert SAMPLES[language]["stats"] in pages["the statistics"].content.decode()


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_admins_other_pages_show_no_english_strings_of_the_app(language, admin_client, desk):
    conversation = desk["waiting"].conversation
    with override_settings(LANGUAGE_CODE=language, USE_I18N=True):
        for url in (
            f"/admin/toolcalling/conversation/{conversation.pk}/change/",
            "/admin/toolcalling/conversation/",
            "/admin/toolcalling/message/",
            "/admin/toolcalling/usagecounter/",
            "/admin/toolcalling/usagecounter/summary/",
        ):
            response = admin_client.get(url)
            assert response.status_code == 200, url
            assert_no_english(response.content.decode(), language, url)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_chat_page_and_its_script_catalogue_show_no_english_strings_of_the_app(language, alice):
    with override_settings(LANGUAGE_CODE=language, USE_I18N=True):
        html = render_chat(alice)
        assert_no_english(html, language, "the chat page")
        assert SAMPLES[language]["chat"] in html
        assert_no_english(render_chat(AnonymousUser()), language, "the chat page for a visitor")
