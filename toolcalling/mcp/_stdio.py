"""MCP over stdio: newline-delimited JSON-RPC on stdin and stdout, for one assistant and one user."""

from __future__ import annotations

import json
import logging
from typing import IO, TYPE_CHECKING, Any

from django.db import close_old_connections

from ._protocol import INTERNAL_ERROR, MCPEndpoint, Reply

if TYPE_CHECKING:
    from ..assistant import Assistant

logger = logging.getLogger("toolcalling")


def serve_stdio(assistant: Assistant, user: Any, stdin: IO[bytes] | IO[str], stdout: IO[str]) -> None:
    """Answer each line of ``stdin`` on ``stdout`` until the client closes ``stdin``.

    Nothing else may be written to ``stdout`` (logs go to stderr). ``stdin`` is best binary (``sys.stdin.buffer``):
    a line that is not UTF-8 then gets a parse error like any other bad line, and the server lives on. Database
    connections are handled per message, as Django does per request, so a session open for days keeps working.
    """
    endpoint = MCPEndpoint(assistant, user)
    for line in stdin:
        data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        if not data.strip():
            continue
        reply = answer(endpoint, data)
        if reply.body is not None:
            stdout.write(json.dumps(reply.body, ensure_ascii=False, separators=(",", ":")) + "\n")
            stdout.flush()


def answer(endpoint: MCPEndpoint, data: bytes) -> Reply:
    """The reply to one line; a bug answers an internal error (logged), as a web server's 500 would, and the
    session goes on: one bad line must not end a client's session."""
    close_old_connections()
    try:
        return endpoint.handle_bytes(data)
    except Exception:
        logger.exception("the MCP stdio server failed on a message")
        return endpoint.refuse(INTERNAL_ERROR, "Internal error.", status=500)
    finally:
        close_old_connections()
