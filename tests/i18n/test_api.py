"""The API answers in the language the client asks for (``Accept-Language``) on a site with ``LocaleMiddleware``:
the app's own error details and validation messages, with the codes unchanged."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import override_settings

# What a multilingual site adds: Django picks each request's language from its Accept-Language header.
LOCALIZED = [*settings.MIDDLEWARE]
LOCALIZED.insert(LOCALIZED.index("django.contrib.sessions.middleware.SessionMiddleware") + 1,
                 "django.middleware.locale.LocaleMiddleware")  # fmt: skip

NOTHING_WAITING = {
    "ko": "이 대화에는 승인을 기다리는 도구 호출이 없습니다.",
    "de": "Kein Tool-Aufruf dieser Unterhaltung wartet auf Genehmigung.",
    "en": "No tool call of this conversation is waiting for approval.",
}
UNKNOWN_ASSISTANT = {
    "ko": "알 수 없는 어시스턴트 'nope'입니다.",
    "de": "Unbekannter Assistent 'nope'.",
    "en": "Unknown assistant 'nope'.",
}


@pytest.fixture
def localized():
    with override_settings(MIDDLEWARE=LOCALIZED, USE_I18N=True):
        yield


@pytest.mark.parametrize("language", ["ko", "de", "en"])
def test_an_error_detail_comes_back_in_the_language_asked_for(localized, api, conversation, language):
    response = api.post(f"/api/toolcalling/conversations/{conversation['id']}/cancel/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 409
    assert response.json() == {"detail": NOTHING_WAITING[language], "code": "nothing_waiting", "status": "idle"}
    assert response["Content-Language"] == language


@pytest.mark.parametrize("language", ["ko", "de", "en"])
def test_a_validation_message_comes_back_in_the_language_asked_for(localized, api, language):
    response = api.post(
        "/api/toolcalling/conversations/", {"assistant": "nope"}, format="json", HTTP_ACCEPT_LANGUAGE=language
    )
    assert response.status_code == 400
    assert response.json() == {"assistant": [UNKNOWN_ASSISTANT[language]]}


def test_a_browser_asking_for_korean_first_gets_korean(localized, api, conversation):
    response = api.post(
        f"/api/toolcalling/conversations/{conversation['id']}/cancel/",
        HTTP_ACCEPT_LANGUAGE="ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7",
    )
    assert response.json()["detail"] == NOTHING_WAITING["ko"]
