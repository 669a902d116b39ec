"""The demo in each language it ships, in Chromium against the demo itself (its own settings, run as `make demo`
runs it): the browser's language picks Korean or German, the header's switcher changes it, and ``LANG=de…``
starts the demo in German whatever the browser asks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from demo_site.languages import started_in
from tests import services
from tests.packaging.conftest import copy_source

# The demo runs its own database: one run of the suite is enough (the PostgreSQL and MariaDB passes skip these).
pytestmark = pytest.mark.skipif(settings.DATABASE != "sqlite", reason="independent of the suite's database")

LEFT_OUT = ("OPENAI_", "TOOLCALLING_", "DJANGO_", "CELERY_", "LC_")


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def demo(workdir: Path, **env: str) -> Iterator[str]:
    """The demo site, migrated and set up, served by runserver from a copy of the checkout; its address."""
    source = copy_source(workdir / "checkout")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(LEFT_OUT) and k not in ("LANG", "REDIS_URL")}
    environment.update({"DJANGO_SETTINGS_MODULE": "demo_site.settings", "LANG": "C.UTF-8", **env})
    for command in (["migrate", "--noinput"], ["demo_setup"]):
        subprocess.run(
            [sys.executable, "manage.py", *command], cwd=source, env=environment, check=True, capture_output=True,
            timeout=300,
        )  # fmt: skip
    port = services.free_port()
    log = (workdir / "demo.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=source, env=environment, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        services.wait_until(lambda: accepts(port) or server.poll() is not None, timeout=60, what="the demo")
        assert server.poll() is None, (workdir / "demo.log").read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def sign_in(page: Page, url: str, button: str) -> None:
    page.goto(url + "/")
    page.locator("input[name=username]").fill("alice")
    page.locator("input[name=password]").fill("alice-demo-pass")
    page.get_by_role("button", name=button, exact=True).click()
    page.wait_for_function("() => Boolean(document.querySelector('.tc-chat')?.toolcallingChat)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with demo(tmp_path_factory.mktemp("demo")) as url:
        yield url


def test_the_browsers_language_shows_the_demo_in_korean_and_the_switcher_in_german(site, browser):
    context = browser.new_context(locale="ko-KR")
    page = context.new_page()
    page.goto(site + "/accounts/login/")
    expect(page.locator("html")).to_have_attribute("lang", "ko")
    expect(page.get_by_role("heading", name="로그인")).to_be_visible()
    expect(page.get_by_text("사용자 이름")).to_be_visible()
    sign_in(page, site, "로그인")
    expect(page.get_by_role("button", name="보내기")).to_be_visible()  # the app's words
    expect(page.locator("header.site")).to_contain_text("데모 상점")  # the demo's own
    expect(page.locator("header.site")).to_contain_text("alice(으)로 로그인함")

    page.get_by_label("언어").select_option("de")
    page.get_by_role("button", name="바꾸기").click()
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.get_by_role("button", name="Senden")).to_be_visible()
    expect(page.get_by_role("heading", name="Unterhaltungen")).to_be_visible()
    expect(page.locator("header.site")).to_contain_text("Angemeldet als alice")
    page.get_by_label("Sprache").select_option("en")
    page.get_by_role("button", name="Wechseln").click()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    context.close()


def test_the_asked_for_language_of_an_answer_is_the_pages(site, browser):
    context = browser.new_context(locale="de-DE")
    page = context.new_page()
    sign_in(page, site, "Anmelden")
    box = page.get_by_label("Ihre Nachricht")
    box.fill("List my orders")
    box.press("Enter")
    # The offline model's own words come in the page's language, the shop's data as it is.
    expect(page.locator(".tc-messages .tc-assistant").last).to_contain_text("Einträge gefunden", timeout=15_000)
    context.close()


def test_lang_starts_the_demo_in_german_whatever_the_browser_asks(tmp_path, browser):
    with demo(tmp_path, LANG="de_DE.UTF-8") as url:
        context = browser.new_context(locale="en-US")
        page = context.new_page()
        page.goto(url + "/accounts/login/")
        expect(page.get_by_role("heading", name="Anmelden")).to_be_visible()
        sign_in(page, url, "Anmelden")
        expect(page.get_by_role("button", name="Senden")).to_be_visible()
        context.close()


@pytest.mark.parametrize(
    ("environ", "language"),
    [
        ({"LANG": "ko_KR.UTF-8"}, "ko"),
        ({"LANG": "de_AT.UTF-8"}, "de"),
        ({"LANG": "en_US.UTF-8"}, None),  # most machines: the browser decides
        ({"LANG": "fr_FR.UTF-8"}, None),  # not shipped
        ({"LANG": "C.UTF-8"}, None),
        ({"LANG": "en_US.UTF-8", "DEMO_LANGUAGE": "ko"}, "ko"),
        ({}, None),
    ],
)
def test_the_language_the_demo_starts_in(environ, language):
    assert started_in(environ) == language
