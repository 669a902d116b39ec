"""MCP over stdio: newline-delimited JSON-RPC on stdin and stdout, for one assistant and one user."""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any

from django.db import close_old_connections

from ._protocol import MCPEndpoint

if TYPE_CHECKING:
    from ..assistant import Assistant


def serve_stdio(assistant: Assistant, user: Any, stdin: IO[str], stdout: IO[str]) -> None:
    """Answer each line of ``stdin`` on ``stdout`` until the client closes ``stdin``.

    Nothing else may be written to ``stdout`` (logs go to stderr). Database connections are handled per
    message, as Django does per request, so a session that stays open for days keeps working.
    """
    endpoint = MCPEndpoint(assistant, user)
    for line in stdin:
        if not line.strip():
            continue
        close_old_connections()
        try:
            reply = endpoint.handle_bytes(line.encode())
        finally:
            close_old_connections()
        if reply.body is not None:
            stdout.write(json.dumps(reply.body, ensure_ascii=False, separators=(",", ":")) + "\n")
            stdout.flush()
