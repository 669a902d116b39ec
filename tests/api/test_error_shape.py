"""Every error of the API has its one shape, also a 404 that Django raised or a path no view takes."""

import uuid

from django.test import Client

URL = "/api/toolcalling/"
NOT_FOUND = {"code": "not_found", "status": None}


def test_a_missing_object_is_a_404_in_the_apis_shape(api):
    response = api.get(URL + f"conversations/{uuid.uuid4()}/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No Conversation matches the given query.", **NOT_FOUND}


def test_an_id_that_is_not_one_is_a_json_404_not_the_sites_html_page(alice):
    client = Client(enforce_csrf_checks=True)  # a browser session: a POST without a token
    client.force_login(alice)
    for method, path in [
        ("get", "conversations/0.5/"),
        ("post", "conversations/0.5/cancel/"),
        ("get", "tool-calls/a.b/approve/"),
    ]:
        response = getattr(client, method)(URL + path)
        assert response.status_code == 404, path
        assert response["Content-Type"] == "application/json"
        assert response.json() == {"detail": "Not found.", **NOT_FOUND}


def test_an_id_with_a_line_break_is_a_json_404_too(api):
    # A path segment may hold any character once decoded: "%0A" is a line break, which "." in a pattern skips.
    for path in ("conversations/a%0Ab/messages/", "attachments/%0A/content/", "tool-calls/1/%0A/"):
        response = api.post(URL + path, {}, format="json")
        assert response.status_code == 404, path
        assert response.json() == {"detail": "Not found.", **NOT_FOUND}, path


def test_a_path_without_its_slash_is_still_redirected(alice):
    client = Client()
    client.force_login(alice)
    response = client.get(URL + "conversations")
    assert response.status_code == 301 and response["Location"] == URL + "conversations/"


def test_a_body_that_is_not_json_is_a_400_with_a_code(api):
    response = api.post(URL + "conversations/", data=b"\x00", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error" and response.json()["status"] is None


def test_a_body_over_the_sites_upload_limit_is_a_413_in_the_apis_shape(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = "a" * 2000
    for path, data, content_type in [
        ("conversations/", '{"assistant": "helper", "title": "' + big + '"}', "application/json"),
        ("conversations/", "assistant=helper&title=" + big, "application/x-www-form-urlencoded"),
        ("ai-sdk/chat/", "id=x&messages=" + big, "application/x-www-form-urlencoded"),
        ("ag-ui/", '{"threadId": "' + big + '"}', "application/json"),
    ]:
        response = api.generic("POST", URL + path, data, content_type=content_type)
        assert response.status_code == 413, (path, content_type)
        assert response.json() == {
            "detail": "The request is larger than this site accepts.",
            "code": "request_too_large",
            "status": None,
        }, (path, content_type)


def test_a_path_no_view_of_the_frontends_or_mcp_takes_is_a_json_404(api):
    for method, path in [
        ("get", "ai-sdk/chat//stream"),
        ("get", "ai-sdk/chat/a/b/stream"),
        ("post", "ai-sdk/other"),
        ("post", "ag-ui/x"),
        ("post", "mcp//"),
        ("post", "mcp/a/b/"),
    ]:
        response = getattr(api, method)(URL + path)
        assert response.status_code == 404, path
        assert response.json() == {"detail": "Not found.", **NOT_FOUND}, path
