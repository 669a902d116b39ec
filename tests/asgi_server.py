"""The suite under ASGI (``TOOLCALLING_TEST_SERVER=asgi``): the test site served by uvicorn in place of
pytest-django's live server, and an API client whose requests go through Django's ASGI handler.

The streaming and approval groups use them in that mode (their conftests), so every test of theirs runs under
ASGI as it runs under WSGI in the other passes: a streamed turn then runs on the turn loop, its events are read
on the server's event loop, and the views see an ``ASGIRequest``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn
from asgiref.sync import async_to_sync
from django.test import Client, modify_settings
from django.test.client import AsyncClientHandler, FakePayload
from rest_framework.test import APIClient, force_authenticate

from tests.services import wait_until

SERVER = os.environ.get("TOOLCALLING_TEST_SERVER", "wsgi")
if SERVER not in ("wsgi", "asgi"):
    raise pytest.UsageError(f"TOOLCALLING_TEST_SERVER={SERVER!r}: expected 'wsgi' or 'asgi'")
ASGI = SERVER == "asgi"
GROUPS = ("streaming", "approval")  # the groups that run under ASGI in that mode


class ASGILiveServer:
    """uvicorn serving the test site in a thread of this process (the test database is this process's)."""

    def __init__(self) -> None:
        from tests.asgi import application

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=2)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.url = f"http://127.0.0.1:{port}"
        # What pytest-django's live server does around each test that uses it (its ``_live_server_helper``).
        self._live_server_modified_settings = modify_settings(ALLOWED_HOSTS={"append": "127.0.0.1"})
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)
        self.thread.start()

        def started() -> bool:
            assert self.thread.is_alive(), "uvicorn stopped before it started"
            return self.server.started

        wait_until(started, timeout=10, what="uvicorn")

    def requests_running(self) -> int:
        """Requests whose response has not ended yet (a stream still open among them)."""
        return len(self.server.server_state.tasks)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class ASGIForceAuthHandler(AsyncClientHandler):
    """Django's in-process ASGI handler, authenticating as DRF's test client does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._force_user: Any = None
        self._force_token: Any = None
        super().__init__(*args, **kwargs)

    async def get_response_async(self, request: Any) -> Any:
        force_authenticate(request, self._force_user, self._force_token)
        return await super().get_response_async(request)


class ASGIHandlerOfEnviron:
    """What ``APIClient`` calls with the WSGI environ it built: the request as an ASGI scope, through
    ``ASGIForceAuthHandler``. A streamed answer is read to its end (the test client has no server loop to keep)."""

    def __init__(self, enforce_csrf_checks: bool) -> None:
        self.enforce_csrf_checks = enforce_csrf_checks
        self.asgi = ASGIForceAuthHandler(enforce_csrf_checks)
        self._force_user: Any = None
        self._force_token: Any = None

    def __call__(self, environ: dict[str, Any]) -> Any:
        self.asgi._force_user, self.asgi._force_token = self._force_user, self._force_token
        with no_running_loop():
            response = async_to_sync(self.asgi)(scope_of(environ))
            response.wsgi_request = response.asgi_request
            if response.streaming and response.is_async:
                response.streaming_content = async_to_sync(collect)(response.streaming_content)
        return response


@contextmanager
def no_running_loop() -> Iterator[None]:
    """The suite's browser (Playwright's sync API) leaves its event loop marked as running in the main thread
    between its calls, and ``async_to_sync`` refuses to start beside a running loop; no code of that loop runs
    while a test's request does, so the mark is set aside for the request."""
    loop = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(loop)


class ASGIAPIClient(APIClient):
    """DRF's ``APIClient`` (same methods, same responses) with each request run through Django's ASGI handler."""

    def __init__(self, enforce_csrf_checks: bool = False, **defaults: Any) -> None:
        super().__init__(enforce_csrf_checks, **defaults)
        self.handler = ASGIHandlerOfEnviron(enforce_csrf_checks)  # type: ignore[assignment]


class ASGIClient(Client):
    """Django's test ``Client`` (the admin's pages) the same way."""

    def __init__(self, enforce_csrf_checks: bool = False, **defaults: Any) -> None:
        super().__init__(enforce_csrf_checks, **defaults)
        self.handler = ASGIHandlerOfEnviron(enforce_csrf_checks)  # type: ignore[assignment]


async def collect(content: Any) -> list[bytes]:
    return [chunk async for chunk in content]


def scope_of(environ: dict[str, Any]) -> dict[str, Any]:
    """The ASGI scope (and ``_body_file``, as Django's ``AsyncRequestFactory`` passes the body) of a WSGI environ."""
    headers = [(b"host", b"testserver")]
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.append((key[5:].lower().replace("_", "-").encode("latin1"), str(value).encode("latin1")))
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers.append((key.lower().replace("_", "-").encode("latin1"), str(environ[key]).encode("latin1")))
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": environ["REQUEST_METHOD"],
        # The environ holds the path's bytes decoded as latin-1 (PEP 3333); ASGI holds text.
        "path": environ["PATH_INFO"].encode("latin1").decode("utf-8"),
        "query_string": environ.get("QUERY_STRING", "").encode("latin1"),
        "root_path": "",
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "server": (environ.get("SERVER_NAME", "testserver"), int(environ.get("SERVER_PORT") or 80)),
        "client": (environ.get("REMOTE_ADDR", "127.0.0.1"), 0),
        "headers": headers,
        "_body_file": FakePayload(body),
    }


def api_client() -> APIClient:
    """An API client of the streaming and approval groups: through ASGI in that mode."""
    return ASGIAPIClient() if ASGI else APIClient()


def client() -> Client:
    """A test client of those groups (the admin's pages): through ASGI in that mode."""
    return ASGIClient() if ASGI else Client()


def group_live_server(live_server: Any, request: pytest.FixtureRequest) -> Any:
    """What a group's ``live_server`` fixture is: uvicorn in that mode (one for the session), else pytest-django's."""
    return request.getfixturevalue("asgi_live_server") if ASGI else live_server
