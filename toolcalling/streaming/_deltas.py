"""Text deltas gathered into fewer events: a model streams a few characters per piece, and one event per piece
would make a long answer cost its readers (and the store) an event, a JSON encoding and a write per piece."""

from __future__ import annotations

import time
from collections.abc import Callable

# A delta goes out at once when the last one went out this long ago (a slow model's pieces pass through as
# they come); pieces that arrive faster are gathered, up to this many characters, into one event.
WINDOW = 0.05
MAX_CHARS = 8192


class DeltaBuffer:
    """Gathers text pieces and hands them to ``send`` joined: at once when the stream is slow, else every
    ``WINDOW`` seconds or ``MAX_CHARS`` characters. ``flush()`` sends what is left; call it before any other
    event of the stream, so events keep their order."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self.send = send
        self.pieces: list[str] = []
        self.size = 0
        self.sent_at = 0.0

    def add(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)
        if self.size >= MAX_CHARS or time.monotonic() - self.sent_at >= WINDOW:
            self.flush()

    def flush(self) -> None:
        if not self.pieces:
            return
        text = "".join(self.pieces)
        self.pieces.clear()
        self.size = 0
        self.sent_at = time.monotonic()
        self.send(text)
