"""The React example (``examples/ai-sdk-react``) as a new user meets it: ``make demo`` builds it with npm and serves it
at /react/ with the offline model, and a customer chats there in Chromium — signed in through the site's own sign-in
page, a tool call and its answer, a purchase confirmed on the page with its arguments and preview, a cancellation
staff approve while the page waits, and the conversation read back from the history endpoint after a reload; and
``npm run dev`` against that demo, as the example's README says to develop it.

``make demo`` runs in a copy of the checkout (``tests/demo/test_make_demo.py``), so its build, its database and its
server are its own; without npm the tests skip, and fail under ``CI=true``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests import services
from tests.demo.test_make_demo import listening, make_demo
from tests.packaging.conftest import copy_source

# The demo runs its own database and server: nothing here depends on the suite's database (the full pass only).
# Its set-up (npm ci and the build, migrations, the demo data) took 40 s on two shared cores.
pytestmark = [pytest.mark.once, pytest.mark.timeout(360)]

EXAMPLE = "examples/ai-sdk-react"
WAIT = 20_000  # ms: a bound for one answer of the offline model, not a measure


def need_npm() -> None:
    if shutil.which("npm") is None:
        services.unavailable(f"npm is not installed: make demo cannot build {EXAMPLE} (make system-packages)")


def ask(page: Page, text: str) -> None:
    box = page.get_by_label("Your message")
    expect(box).to_be_enabled(timeout=WAIT)  # the chat takes a message once the last answer has ended
    box.fill(text)
    page.get_by_role("button", name="Send").click()


@dataclass
class Demo:
    port: int
    log: Path
    checkout: Path


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """``make demo`` in a copy of the checkout, for this module's tests (each leaves what the other reads as it was)."""
    need_npm()
    workdir = tmp_path_factory.mktemp("demo")
    with make_demo(workdir) as (port, log):
        built = workdir / "checkout" / EXAMPLE / "dist" / "index.html"
        assert built.exists(), f"make demo did not build it:\n{log.read_text()}"
        yield Demo(port, log, workdir / "checkout")


def sign_in(page: Page, url: str) -> None:
    """Open the page signed out: it sends the user to the site's sign-in page, which brings them back."""
    page.goto(url)
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("alice-demo-pass")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/react/\?conversation=[0-9a-f-]{36}$"))  # a new conversation


def test_the_react_example_chats_confirms_and_reloads_in_chromium_through_make_demo(demo, browser):
    port, log, checkout = demo.port, demo.log, demo.checkout
    context = browser.new_context()
    page = context.new_page()

    sign_in(page, f"http://127.0.0.1:{port}/react/")

    # A question the offline model answers with a tool: the tool part with its output, then the answer.
    ask(page, "Where is my order 20250719-0032?")
    answers = page.locator(".assistant")
    lookup = answers.nth(0).locator(".tool", has_text="Look up an order")
    expect(lookup).to_contain_text('"state": "shipped"', timeout=WAIT)
    expect(answers.nth(0).locator("p").last).to_contain_text(
        "Order number 20250719-0032: the state is shipped, the ETA is 2025-07-23"
    )

    # A purchase the customer confirms: the arguments and the preview before anything runs, then the outcome.
    ask(page, "Please buy 2 MUG-001")
    purchase = answers.nth(1).locator(".tool", has_text="Buy a product")
    expect(purchase.get_by_role("button", name="Decline")).to_be_visible(timeout=WAIT)
    expect(purchase.locator("pre")).to_have_text('{\n  "sku": "MUG-001",\n  "quantity": 2\n}')
    expect(purchase.locator(".preview")).to_contain_text("product: Enamel camping mug (MUG-001)")
    expect(purchase.locator(".preview")).to_contain_text("total: 29.80")
    assert orders(checkout) == []  # nothing bought before the customer confirms
    purchase.get_by_role("button", name="Confirm").click()
    expect(purchase.get_by_role("button", name="Confirm")).to_have_count(0, timeout=WAIT)
    expect(purchase.locator("pre")).to_contain_text('"total": "29.80"', timeout=WAIT)
    ((order_no, total),) = orders(checkout)
    assert total == 29.8
    expect(answers.nth(1).locator("p").last).to_contain_text(f"Order number {order_no}: the state is placed")

    # A call staff decide: the page waits, and shows the outcome once a staff member approves it (the token
    # make demo printed), without a reload.
    ask(page, "Please cancel my order 20251120-0007")
    cancel = answers.nth(2).locator(".tool", has_text="Cancel an order")
    expect(cancel).to_contain_text("Waiting for a staff member", timeout=WAIT)
    expect(cancel.get_by_role("button", name="Confirm")).to_have_count(0)  # not the customer's to decide
    token = re.search(r"export STAFF_TOKEN=(\w+)", log.read_text())
    assert token, log.read_text()
    staff = {"Authorization": f"Token {token[1]}"}
    api = f"http://127.0.0.1:{port}/api/toolcalling/tool-calls/"
    (waiting,) = httpx2.get(f"{api}?status=awaiting_approval", headers=staff).json()
    assert httpx2.post(f"{api}{waiting['id']}/approve/", headers=staff).status_code == 200
    expect(cancel).to_contain_text('"state": "cancelled"', timeout=WAIT)
    expect(answers.nth(2).locator("p").last).to_contain_text("Order number 20251120-0007: the state is cancelled")

    # A reload starts where the conversation is: its history, read from the history endpoint.
    with page.expect_response(re.compile(r"/api/toolcalling/ai-sdk/chat/[0-9a-f-]{36}/messages$")) as history:
        page.reload()
    assert history.value.status == 200
    expect(page.locator(".user")).to_have_text(
        ["Where is my order 20250719-0032?", "Please buy 2 MUG-001", "Please cancel my order 20251120-0007"]
    )
    expect(answers).to_have_count(3)
    expect(answers.nth(0).locator(".tool", has_text="Look up an order")).to_contain_text('"state": "shipped"')
    expect(answers.nth(1).locator(".tool", has_text="Buy a product")).to_contain_text(f'"order_no": "{order_no}"')
    expect(answers.nth(1).locator("p").last).to_contain_text(f"Order number {order_no}: the state is placed")
    expect(answers.nth(2).locator(".tool", has_text="Cancel an order")).to_contain_text('"state": "cancelled"')
    expect(page.get_by_role("button", name="Confirm")).to_have_count(0)
    context.close()


def test_npm_run_dev_serves_the_page_with_the_sites_sign_in_and_api_through_its_proxy(demo, browser):
    """``npm run dev`` as the example's README says: Vite's own port, /api and /accounts passed to the site, one
    origin for the browser. Vite's proxy changed the Host header to the site's, and Django's CSRF check then refused
    the sign-in (the form's Origin was Vite's)."""
    dev_port = services.free_port()
    output = demo.checkout / "vite.log"
    vite = subprocess.Popen(
        ["npm", "run", "dev", "--", "--host", "127.0.0.1", "--port", str(dev_port), "--strictPort"],
        cwd=demo.checkout / EXAMPLE, env={**os.environ, "DJANGO_URL": f"http://127.0.0.1:{demo.port}"},
        stdout=output.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        services.wait_until(
            lambda: vite.poll() is not None or listening(dev_port), timeout=60, what="npm run dev to listen"
        )
        assert vite.poll() is None, output.read_text()
        context = browser.new_context()
        page = context.new_page()
        sign_in(page, f"http://127.0.0.1:{dev_port}/react/")
        ask(page, "Where is my order 20250719-0032?")
        expect(page.locator(".assistant p").last).to_contain_text(
            "Order number 20250719-0032: the state is shipped", timeout=WAIT
        )
        context.close()
    finally:
        os.killpg(vite.pid, signal.SIGTERM)  # npm and the vite it started
        try:
            vite.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(vite.pid, signal.SIGKILL)
            vite.wait(timeout=10)


def orders(checkout: Path) -> list[tuple[str, float]]:
    """The orders of MUG-001 placed in the demo's own database (the demo data's are shipped or delivered)."""
    with closing(sqlite3.connect(checkout / "var" / "demo.sqlite3")) as database:
        return database.execute(
            "SELECT o.order_no, o.total FROM shop_order o JOIN shop_orderline l ON l.order_id = o.id"
            " JOIN shop_product p ON p.id = l.product_id WHERE p.sku = 'MUG-001' AND o.state = 'placed'"
        ).fetchall()


def test_make_builds_the_example_without_the_registry_from_npms_cache(tmp_path):
    """Once npm's cache holds the locked packages (make test builds the example first), the build needs no registry:
    with it unreachable, npm ci retried it for three minutes before it used the cache."""
    need_npm()
    source = copy_source(tmp_path / "checkout")
    build = ["make", "--no-print-directory", f"{EXAMPLE}/dist/index.html"]
    first = subprocess.run(build, cwd=source, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    shutil.rmtree(source / EXAMPLE / "node_modules")
    shutil.rmtree(source / EXAMPLE / "dist")

    nowhere = "http://127.0.0.1:9"  # the discard port: every request to the registry is refused at once
    offline = {**os.environ, "npm_config_proxy": nowhere, "npm_config_https_proxy": nowhere}
    again = subprocess.Popen(
        build, cwd=source, env=offline, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        printed, _ = again.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(again.pid, signal.SIGKILL)  # make and the npm it started
        again.wait()
        raise AssertionError("the build still waited for the registry after 90 s") from None
    assert again.returncode == 0, printed
    assert (source / EXAMPLE / "dist" / "index.html").exists()
