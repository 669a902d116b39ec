"""Shared fixtures: users, an API client, and a strict scripted model served over HTTP."""

import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import translation
from rest_framework.test import APIClient

from tests import asgi_server, mariadb, mutation, passes, services
from tests.celery_app import app as celery_app  # noqa: F401  (binds the app's shared tasks to the test site)
from tests.chromium import browser  # noqa: F401  (one browser for every directory)
from toolcalling.engine import _turn_loop
from toolcalling.testing import ScriptedModel
from toolcalling.testutils import override_model

# The model APIs a test marked ``each_api`` runs on, with the model each is asked for: on the Responses API
# one of OpenAI's reasoning models, so the strict server's reasoning rules apply; on Anthropic's a model with
# extended thinking on, so its thinking blocks must come back with every tool-use continuation.
SUITE_API = os.environ.get("TOOLCALLING_TEST_API", "chat_completions")
ANTHROPIC_THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
APIS = {
    "chat_completions": {},
    "responses": {"MODEL": "gpt-5-mini"},
    "anthropic": {"MODEL": "claude-sonnet-4-5", "MODEL_OPTIONS": ANTHROPIC_THINKING},
}

# The runners of the app's background jobs (TOOLCALLING["TASKS"]); tests marked each_runner run on both, the rest on
# Celery's. Their exactly-once guarantees rest on the database's conditional updates, so they hold on either.
TASK_RUNNERS = ["celery", "django"]


def pytest_configure(config):
    if SUITE_API not in APIS:
        raise pytest.UsageError(f"TOOLCALLING_TEST_API={SUITE_API!r}: expected one of {', '.join(APIS)}")
    config.addinivalue_line("markers", "toolcalling(**settings): TOOLCALLING keys for the model fixture")
    config.addinivalue_line("markers", "each_api: run the test once per model API (TOOLCALLING['API'])")
    config.addinivalue_line(
        "markers",
        "each_runner: run the test once per task runner (TOOLCALLING['TASKS']: Celery's worker, then Django's Tasks"
        " on a db_worker) through the ``task_runner`` fixture",
    )
    config.addinivalue_line(
        "markers",
        "chat_completions: written for Chat Completions (reads its request or reply bodies, or prices its test model"
        " by name), so it runs there whatever the suite's API",
    )
    config.addinivalue_line(
        "markers",
        "database(reason): its outcome can depend on the database, so make test runs it on PostgreSQL and MariaDB"
        " too (-m database); tests/passes.py marks most tests by rule, a test its rules miss says so itself",
    )
    config.addinivalue_line(
        "markers",
        "once: cannot depend on the database (packaging, the docs, schemathesis): never in the database passes",
    )


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("each_api") and "model_api" in metafunc.fixturenames:
        metafunc.parametrize("model_api", list(APIS))
    if metafunc.definition.get_closest_marker("each_runner") and "task_runner" in metafunc.fixturenames:
        metafunc.parametrize("task_runner", TASK_RUNNERS)


def pytest_report_header(config):
    where = settings.DATABASES["default"]
    if settings.DATABASE == "postgresql":
        database = f"database: postgresql, a private cluster in {where['HOST']} (TOOLCALLING_TEST_DATABASE)"
    elif settings.DATABASE == "mariadb":
        database = f"database: mariadb, a private server on 127.0.0.1:{where['PORT']} (TOOLCALLING_TEST_DATABASE)"
    else:
        database = (
            f"database: sqlite, {where['TEST']['NAME']} (TOOLCALLING_TEST_DATABASE=postgresql or mariadb for those)"
        )
    server = f"streaming and approval groups under {asgi_server.SERVER.upper()} (TOOLCALLING_TEST_SERVER=wsgi or asgi)"
    return [database, f"model API: {SUITE_API} (TOOLCALLING_TEST_API=chat_completions, responses or anthropic)", server]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Before the test's fixtures end, while its settings still hold: the pages a browser test left open are
    closed, and the turns and live-server requests it started end. A request the page sent just before it closed
    can reach the view that opens its stream only after the test's body; it must read the test's short
    ``EVENTS_KEEPALIVE``, not the default one, which outlives the wait. Under mutmut's stats run, before it reads
    what the test reached: add what the workers ran for it."""
    try:
        requests_end_with_their_test(item)
    except AssertionError as exc:
        failed: AssertionError | None = exc
    else:
        failed = None
    if mutation.collecting():
        from mutmut.state import state

        state()._stats.update(mutation.take_worker_hits())
    result = yield  # the fixtures' own teardown, the database cleaned last, after the requests ended
    if failed is not None:
        raise failed
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A live-server test that failed in its body says, in its report, where the server's requests were then and
    what the database's other sessions were doing: a page that waited for an answer that never came shows why."""
    report = yield
    if report.when == "call" and report.failed and "live_server" in item.fixturenames:
        server = item.funcargs.get("live_server")
        if server is not None and not isinstance(server, asgi_server.ASGILiveServer):
            report.sections.append(("the live server's requests when it failed", where_requests_wait(server) or "none"))
            report.sections.append(("the database's sessions when it failed", database_sessions()))
    return report


def database_sessions() -> str:
    """The test database's other sessions, with what each runs and waits for (PostgreSQL and MariaDB)."""
    from django.db import connection

    query = {
        "postgresql": "SELECT pid, state, wait_event_type, wait_event, now() - xact_start, left(query, 300)"
        " FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        "mysql": "SELECT id, command, time, state, left(info, 300) FROM information_schema.processlist"
        " WHERE id <> connection_id()",
    }.get(connection.vendor)
    if query is None:
        return f"not shown on {connection.vendor}"
    try:
        with connection.cursor() as cursor:
            cursor.execute(query)
            return "\n".join(map(repr, cursor.fetchall())) or "none"
    except Exception as exc:  # noqa: BLE001 (a report's extra, never the failure itself)
        return f"could not be read: {exc!r}"


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """First the ``database`` marker on the tests its rules select (tests/passes.py), before ``-m`` selects by it;
    last, in the mutation run, only the tests of the mutated area, quickest first (tests/mutation.py)."""
    passes.mark(items)
    result = yield
    mutation.select(config, items)
    return result


@pytest.fixture(scope="session")
def django_db_keepdb(request) -> bool:
    """On PostgreSQL and MariaDB the test database is not dropped at the end: the whole server is thrown away,
    and dropping the database first races the live server's stream threads whose readers left but which hold
    a connection until their next keepalive ("database is being accessed by other users" on PostgreSQL; on
    MariaDB the drop would wait for their locks)."""
    return settings.DATABASE in ("postgresql", "mariadb") or bool(request.config.getvalue("reuse_db"))


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix) -> Iterator[None]:
    """Before pytest-django makes the test database: start this run's PostgreSQL cluster or MariaDB server
    when the run uses one.

    It stops after the test database (and the Celery workers, which depend on it) are done with.
    """
    if settings.DATABASE == "postgresql":
        with services.postgres_server(Path(settings.DATABASES["default"]["HOST"])):
            yield
    elif settings.DATABASE == "mariadb":
        with mariadb.mariadb_server(settings.VAR_DIR / "mariadb", settings.DATABASES["default"]["PORT"]):
            yield
    else:
        yield


@pytest.fixture(autouse=True)
def language_ends_with_its_test() -> Iterator[None]:
    """Each test starts in the site's language. A request through LocaleMiddleware activates its language in
    the thread that served it, and the test client serves requests in the test's own thread."""
    yield
    translation.deactivate()


def live_server_requests(server) -> int:
    """The live server's requests still running: uvicorn's (TOOLCALLING_TEST_SERVER=asgi), else the request threads
    of pytest-django's server (ThreadingMixIn starts one per connection)."""
    if isinstance(server, asgi_server.ASGILiveServer):
        return server.requests_running()
    return len(request_threads(server))


def request_threads(server) -> list[threading.Thread]:
    httpd = server.thread.httpd
    return [t for t in threading.enumerate() if getattr(getattr(t, "_target", None), "__self__", None) is httpd]


def where_requests_wait(server) -> str:
    """Where each request thread of pytest-django's live server is now: what a request that did not end waits on."""
    if isinstance(server, asgi_server.ASGILiveServer):
        return ""
    frames = sys._current_frames()
    stacks = []
    for thread in request_threads(server):
        frame = frames.get(thread.ident or -1)
        if frame is not None:
            where = "".join(traceback.format_stack(frame)[-8:])
            stacks.append(f"{thread.name} ({what_request_does(frame)}):\n{where}")
    return "\n".join(stacks)


def what_request_does(frame) -> str:
    """The request a live-server thread serves, from its frames: its request line, and for an event stream the
    keepalive it writes with (a stream whose reader left ends at its second keepalive) and how long ago it last
    wrote."""
    said = []
    while frame is not None:
        names = frame.f_locals
        if frame.f_code.co_name == "follow" and "follower" in names:
            follower = names["follower"]
            since = time.monotonic() - follower.last_write_at
            said.append(f"keepalive {follower.keepalive} s, last written {since:.1f} s ago")
        if frame.f_code.co_name == "handle_one_request" and "self" in names:
            said.append(repr(getattr(names["self"], "requestline", "")))
        frame = frame.f_back
    return ", ".join(reversed(said))


def turns_running() -> int:
    current = _turn_loop._current
    return len(current.running) if current is not None else 0


@pytest.fixture(scope="session")
def asgi_live_server() -> Iterator[asgi_server.ASGILiveServer]:
    """The test site under uvicorn, for the groups that run under ASGI in that mode (``asgi_server``)."""
    server = asgi_server.ASGILiveServer()
    yield server
    server.stop()


def requests_end_with_their_test(item) -> None:
    """Every page a browser test opened is closed, even when it failed before closing them, so their streams end
    with the test instead of reconnecting into the next one; then the turns on the turn loop and the live server's
    requests end.

    A stream whose reader left ends when its next keepalive cannot be written; tests that leave one open
    use a short EVENTS_KEEPALIVE. Without this its thread would run on into later tests, and fail there.
    """
    opened = item.funcargs.get("browser") if "browser" in item.fixturenames else None
    if opened is not None:
        for context in opened.contexts:
            context.close()
    # A streamed turn under ASGI runs on the turn loop, past its response when the reader left: it ends first.
    services.wait_until(lambda: not turns_running(), timeout=20, what="the turns on the turn loop to end")
    server = item.funcargs.get("live_server") if "live_server" in item.fixturenames else None
    if server is None:
        return
    # 20 s: less than two default keepalives (15 s), so a test that forgot a short one fails here, every time.
    what = "the live server's requests to end (does a stream whose reader left have a short EVENTS_KEEPALIVE?)"
    # A page's last request can still be on its way (in the browser's network process, or not yet accepted) when
    # the page has closed: after a browser test the server must stay without requests for a moment, so that such
    # a request too is served while the test's short keepalive holds.
    quiet = services.Quiet(lambda: live_server_requests(server) == 0, for_seconds=0.5 if opened is not None else 0)
    try:
        services.wait_until(quiet, timeout=20, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the requests' threads are at:\n{where_requests_wait(server)}") from None


@pytest.fixture
def model_api(request) -> str:
    """The model API the ``model`` fixture's turns speak: ``TOOLCALLING_TEST_API`` (default Chat Completions) runs
    the whole suite on another; a test marked ``each_api`` runs on each, one marked ``chat_completions`` (written for
    that API's bodies or its test model) on Chat Completions."""
    if request.node.get_closest_marker("chat_completions"):
        return "chat_completions"
    return SUITE_API


@pytest.fixture
def task_runner() -> str:
    """The runner a worker fixture starts and this process queues to: ``"celery"``, or on a test marked
    ``each_runner`` each of ``TASK_RUNNERS`` in turn."""
    return "celery"


@pytest.fixture
def model(db, request, model_api) -> Iterator[ScriptedModel]:
    """A scripted model on a strict local server; ``@pytest.mark.toolcalling(KEY=value)`` adds settings."""
    marker = request.node.get_closest_marker("toolcalling")
    chosen = marker.kwargs if marker else {}
    api = chosen.get("API", model_api)  # a test that names its API gets that API's defaults, not the suite's
    with override_model(**{"API": api, **APIS[api], **chosen}) as scripted:
        yield scripted


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="pw")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="pw")


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """Django's cache empty before and after the test (throttle counts and tool listings live there)."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api(alice, request) -> APIClient:
    # The streaming and approval groups' requests go through ASGI under TOOLCALLING_TEST_SERVER=asgi.
    client = asgi_server.api_client() if group_of(request) in asgi_server.GROUPS else APIClient()
    client.force_authenticate(alice)
    return client


def group_of(request) -> str:
    """The suite's directory a test is in (``streaming``, ``approval`` …)."""
    return Path(request.node.path).relative_to(Path(__file__).parent).parts[0]


@pytest.fixture
def conversation(api) -> dict:
    response = api.post("/api/toolcalling/conversations/", {"assistant": "helper"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()
