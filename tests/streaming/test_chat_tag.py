"""The ``{% toolcalling_chat %}`` tag renders the chat for a signed-in user and refuses unknown assistants."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.template import Context, Template
from django.test import RequestFactory


def render(user, source: str = '{% load toolcalling %}{% toolcalling_chat "helper" examples="A?|B <b>?" %}') -> str:
    request = RequestFactory().get("/")
    request.user = user
    return Template(source).render(Context({"request": request, "csrf_token": "token-123"}))


def test_the_chat_renders_with_its_api_and_csrf_token(alice):
    html = render(alice)
    assert 'data-assistant="helper"' in html and 'data-api="/api/toolcalling/conversations/"' in html
    assert 'name="csrfmiddlewaretoken" value="token-123"' in html
    assert "/static/toolcalling/chat.js" in html and "/static/toolcalling/chat.css" in html
    assert '<label for="toolcalling-chat-helper-input"' in html and 'aria-live="polite"' in html
    assert ">B &lt;b&gt;?</button>" in html  # examples are escaped like any template text


def test_anonymous_users_are_asked_to_sign_in(db):
    html = render(AnonymousUser())
    assert "Sign in to talk to Helper." in html and "tc-composer" not in html


def test_an_unknown_assistant_is_a_configuration_error(db, alice):
    with pytest.raises(ImproperlyConfigured, match="nope"):
        render(alice, '{% load toolcalling %}{% toolcalling_chat "nope" %}')


def test_client_tools_register_the_pages_functions(alice):
    html = render(alice, '{% load toolcalling %}{% toolcalling_chat "browser" client_tools="pick_color=picker.pick" %}')
    assert 'data-client-tools="toolcalling-chat-browser-client-tools"' in html
    assert (
        '<script id="toolcalling-chat-browser-client-tools" type="application/json">{"pick_color": "picker.pick"}'
        in html
    )


@pytest.mark.parametrize(
    ("pairs", "problem"),
    [("bump=doIt", "'bump' is not a client tool of the assistant"), ("pick_color=alert(1)", "not 'alert(1)'")],
    ids=["a-server-tool", "not-a-function-name"],
)
def test_a_client_tool_the_assistant_lacks_or_a_bad_function_name_is_a_configuration_error(alice, pairs, problem):
    with pytest.raises(ImproperlyConfigured, match=problem.replace("(", r"\(").replace(")", r"\)")):
        render(alice, f'{{% load toolcalling %}}{{% toolcalling_chat "browser" client_tools="{pairs}" %}}')
