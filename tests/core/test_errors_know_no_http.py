"""The errors the engine and approval raise know nothing of HTTP: they are no DRF exceptions, and below the edges no
module imports DRF. A Celery task or a command that runs a turn catches the app's own errors; only the edges'
shared HTTP layer (``toolcalling.web``) gives each error code its HTTP status."""

import grimp
from rest_framework.exceptions import APIException

from toolcalling import exceptions

# The edges and the HTTP layer they share: the only modules that may speak DRF.
HTTP_SIDE = ("toolcalling.api", "toolcalling.frontends", "toolcalling.mcp", "toolcalling.web", "toolcalling.urls")


def request_errors() -> list[type[exceptions.APIError]]:
    return [c for c in vars(exceptions).values() if isinstance(c, type) and issubclass(c, exceptions.APIError)]


def test_no_request_error_is_a_drf_exception():
    errors = request_errors()
    assert len(errors) > 20
    assert [c.__name__ for c in errors if issubclass(c, APIException)] == []
    busy = exceptions.ConversationBusy(status="running")
    assert (busy.code, str(busy.detail), busy.status) == ("conversation_busy", str(busy.default_detail), "running")
    assert not hasattr(busy, "status_code")


def test_only_the_edges_import_drf():
    graph = grimp.build_graph(
        "toolcalling", include_external_packages=True, exclude_type_checking_imports=False, cache_dir=None
    )
    importers = graph.find_modules_that_directly_import("rest_framework")
    assert "toolcalling.api.views" in importers
    assert sorted(m for m in importers if not m.startswith(HTTP_SIDE)) == []
