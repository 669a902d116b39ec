"""The demo serves the React example's build at /react/ (``examples/ai-sdk-react``, once ``npm run build`` wrote
its ``dist/``): the page with the CSRF cookie its POSTs need, its assets, nothing else of the folder."""

import pytest
from django.test import override_settings

from demo_site import views

INDEX = '<!doctype html><script type="module" src="/react/assets/index-x1.js"></script>'


@pytest.fixture
def build(tmp_path, monkeypatch):
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text(INDEX)
    (tmp_path / "assets" / "index-x1.js").write_text("console.log('chat');")
    (tmp_path / "secret.txt").write_text("not served")
    monkeypatch.setattr(views, "REACT_BUILD", tmp_path)
    return tmp_path


@override_settings(ROOT_URLCONF="demo_site.urls", DEMO_OPENAPI=False)
def test_the_built_page_and_its_assets_are_served_at_react(client, build):
    page = client.get("/react/")
    assert page.status_code == 200 and b"".join(page.streaming_content).decode() == INDEX
    assert "csrftoken" in page.cookies
    asset = client.get("/react/assets/index-x1.js")
    assert asset.status_code == 200 and b"".join(asset.streaming_content) == b"console.log('chat');"
    assert client.get("/react/secret.txt").status_code == 404
    assert client.get("/react/assets/../secret.txt").status_code == 404


@override_settings(ROOT_URLCONF="demo_site.urls", DEMO_OPENAPI=False)
def test_without_a_build_the_page_says_how_to_build_it(client, tmp_path, monkeypatch):
    monkeypatch.setattr(views, "REACT_BUILD", tmp_path / "dist")
    answer = client.get("/react/")
    assert answer.status_code == 404 and b"npm ci && npm run build" in answer.content
