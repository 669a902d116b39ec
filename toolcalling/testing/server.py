"""A real local HTTP server speaking OpenAI's Chat Completions and Responses APIs and Anthropic's Messages API,
backed by a responder."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from .backend import ChatBackend, Responder

__all__ = ["OpenAICompatibleServer"]


class _Handler(BaseHTTPRequestHandler):
    """Adapts http.server requests to ChatBackend.handle."""

    protocol_version = "HTTP/1.1"  # keep-alive plus chunked transfer for streams
    server_version = "toolcalling-testing"
    sys_version = ""
    # Idle keep-alive connections would otherwise pin a thread forever.
    timeout = 30
    # Headers and body go out in separate small writes; with Nagle's algorithm on, each answer on a
    # kept-alive connection waits for the client's delayed ACK (about 40 ms on Linux).
    disable_nagle_algorithm = True

    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._dispatch()

    def do_POST(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._dispatch()

    def do_DELETE(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        # Per-request access logs would drown test output.
        return

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    # Consume optional trailers up to the terminating blank line.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        body = self._read_body()
        headers = {key: value for key, value in self.headers.items()}
        status, response_headers, payload = self.server.backend.handle(self.command, self.path, headers, body)
        self.send_response(status)
        for key, value in response_headers.items():
            self.send_header(key, value)
        if isinstance(payload, bytes):
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._write_chunked(payload)

    def _write_chunked(self, chunks: Iterator[bytes]) -> None:
        # Each SSE event becomes its own HTTP chunk and is flushed at once so clients see
        # the stream incrementally rather than all at the end.
        for data in chunks:
            if not data:
                continue
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The listen backlog (socketserver's default is 5): hundreds of turns at once connect together, and a
    # connection beyond a full backlog is dropped (its SYN retried a second later) or reset, which a turn
    # reports as a model_error. The kernel caps it at net.core.somaxconn.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], backend: ChatBackend) -> None:
        self.backend = backend
        self.connections = 0
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1  # in the serving thread, one accepted connection at a time
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up mid-stream is normal (e.g. a test breaking out of a stream);
        # anything else is still reported.
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class OpenAICompatibleServer:
    """Runs a ChatBackend on a local port in a daemon thread.

    Use as ``with OpenAICompatibleServer(model) as server:`` and point the openai SDK at
    ``server.base_url`` (the anthropic SDK at ``server.url``: it adds ``/v1`` itself).
    """

    def __init__(
        self,
        responder: Responder,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model_name: str | None = None,
        require_auth: bool = True,
    ) -> None:
        self.responder = responder
        self.backend = ChatBackend(responder, model_name=model_name, require_auth=require_auth)
        self.host = host
        self.port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections = 0  # what a stopped server had accepted

    @property
    def url(self) -> str:
        """Root URL of the running server, e.g. ``http://127.0.0.1:54321``."""
        if self._server is None:
            raise RuntimeError("OpenAICompatibleServer is not running; call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The URL to pass as the SDK's ``base_url``, ending in ``/v1``."""
        return f"{self.url}/v1"

    @property
    def connections(self) -> int:
        """How many TCP connections the server accepted so far: a client that keeps its connections alive opens
        one for many requests."""
        return self._server.connections if self._server is not None else self._connections

    @property
    def running(self) -> bool:
        """Whether the server is currently accepting requests."""
        return self._server is not None

    def start(self) -> OpenAICompatibleServer:
        """Bind the socket and serve in a background thread; returns self for chaining."""
        if self._server is not None:
            return self
        self._server = _Server((self.host, self.port), self.backend)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"OpenAICompatibleServer:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is None:
            return
        self._connections = server.connections
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
