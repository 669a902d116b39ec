"""A server that starts one streamed answer and then sends nothing more, for the tests of what a client does with
a stream that stops (or holds its connection open) before its end."""

import json
import socket
import threading

# The first events of a streamed answer on each API, up to its first piece of text.
FIRST_EVENTS = {
    "chat_completions": [{"id": "c1", "object": "chat.completion.chunk", "model": "m",
                          "choices": [{"index": 0, "delta": {"content": "Hal"}, "finish_reason": None}]}],
    "responses": [{"type": "response.output_text.delta", "output_index": 0, "delta": "Hal"}],
    "anthropic": [
        {"type": "message_start", "message": {"type": "message", "role": "assistant", "content": [], "model": "m"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hal"}},
    ],
}  # fmt: skip


class StalledStream:
    """A server that starts one streamed answer (up to its first text, then ``tail``) and then sends nothing
    more; it notes when the client hangs up."""

    def __init__(self, events: list[dict], tail: str = "") -> None:
        self.data = ("".join(f"data: {json.dumps(event)}\n\n" for event in events) + tail).encode()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.hung_up = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection, connection.makefile("rb") as reader:
            connection.settimeout(30)
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                length = int(value) if name.strip().lower() == "content-length" else length
            reader.read(length)
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            connection.sendall(head + f"{len(self.data):x}\r\n".encode() + self.data + b"\r\n")
            try:
                if connection.recv(1) == b"":
                    self.hung_up.set()
            except TimeoutError:
                pass

    def close(self) -> None:
        self.listener.close()
        self.thread.join(timeout=40)
