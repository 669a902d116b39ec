"""Django merges catalogs in ``INSTALLED_APPS`` order, so an app listed before this one replaces the words both
translate. Every short string of the app has its own context: with a rival app installed first, whose catalogs
translate "Approve", "History", "Send" and more another way, the desk, the chat page and the models still speak
the app's words, while Django's own lookup of the bare words gets the rival's."""

from __future__ import annotations

from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import translation

from tests.i18n.catalog import LANGUAGES, catalog
from tests.i18n.conftest import logged_in
from tests.i18n.test_pages import CHANGELIST, render_chat
from toolcalling.models import ToolCall

RIVAL = "tests.i18n.rivalapp"
RIVAL_LOCALE = Path(__file__).parent / "rivalapp" / "locale"


def rival_words(language: str) -> dict[str, str]:
    path = RIVAL_LOCALE / language / "LC_MESSAGES" / "django.po"
    return {entry.msgid: entry.msgstr for entry in polib.pofile(str(path))}


def ours(language: str, context: str, msgid: str) -> str:
    entry = catalog(language).find(msgid, msgctxt=context)
    assert entry is not None and entry.msgstr, (context, msgid)
    return entry.msgstr


@pytest.fixture
def rival_first():
    with override_settings(INSTALLED_APPS=[RIVAL, *settings.INSTALLED_APPS], USE_I18N=True):
        yield


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_rivals_words_are_in_effect_for_the_bare_msgids(language, rival_first):
    with translation.override(language):
        for msgid, word in rival_words(language).items():
            assert translation.gettext(msgid) == word


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_desk_keeps_its_own_words_after_a_rival_app(language, rival_first, approver, desk):
    staff = logged_in(approver)
    with override_settings(LANGUAGE_CODE=language):
        page = staff.get(f"{CHANGELIST}{desk['waiting'].pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    for msgid in ("Approve", "Reject", "History", "Tool"):
        assert ours(language, "toolcalling admin", msgid) in html
    rivals = rival_words(language)
    for msgid in ("Approve", "Reject", "History", "Tool"):
        assert rivals[msgid] not in html, (msgid, rivals[msgid])


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_change_page_of_the_app_keeps_its_history_link(language, rival_first, admin_client, desk):
    conversation = desk["waiting"].conversation
    with override_settings(LANGUAGE_CODE=language):
        page = admin_client.get(f"/admin/toolcalling/conversation/{conversation.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert ours(language, "toolcalling admin", "History") in html
    assert rival_words(language)["History"] not in html


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_chat_page_and_the_models_keep_their_words_after_a_rival_app(language, rival_first, alice):
    rivals = rival_words(language)
    with override_settings(LANGUAGE_CODE=language), translation.override(language):
        html = render_chat(alice)
        created = str(ToolCall._meta.get_field("created_at").verbose_name)
        approved = str(ToolCall.Status.APPROVED.label)
    for msgid in ("Send", "Conversations"):
        assert ours(language, "toolcalling chat", msgid) in html
        assert rivals[msgid] not in html
    assert created == ours(language, "toolcalling model", "created at") != rivals["created at"]
    assert approved == ours(language, "toolcalling model", "Approved")
