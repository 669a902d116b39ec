"""Events in Redis: a Redis Stream per conversation, shared by every web and worker process."""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any

from ._event import Event

# Numbering and appending in one script, so concurrent publishers never add ids out of order.
_PUBLISH = """
local seq = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], seq .. '-0', 'type', ARGV[1], 'data', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return seq
"""


class RedisBackend:
    """A Redis Stream per conversation (entry id ``<seq>-0``) plus a counter key that numbers its events."""

    # No read timeout (redis-py's default is 5 s): XREAD BLOCK waits longer than that on purpose, up to
    # EVENTS_KEEPALIVE. A dead server still fails fast on connect.
    OPTIONS: dict[str, Any] = {"socket_timeout": None, "socket_connect_timeout": 2, "health_check_interval": 30}

    def __init__(self, url: str, max_len: int, ttl: int) -> None:
        import redis

        self.url = url
        self.redis = redis.Redis.from_url(url, **self.OPTIONS)
        self.max_len = max_len
        self.ttl = ttl
        self._publish = self.redis.register_script(_PUBLISH)
        # An asyncio client belongs to the event loop it was made in: one per loop.
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    @staticmethod
    def _keys(conversation_id: str) -> tuple[str, str]:
        return f"toolcalling:events:{conversation_id}", f"toolcalling:events:{conversation_id}:seq"

    def publish(self, conversation_id: str, type: str, data: dict[str, Any]) -> Event:
        seq = self._publish(
            keys=list(self._keys(conversation_id)),
            args=[type, self.max_len, json.dumps(data, default=str), self.ttl],
        )
        return Event(seq=int(seq), type=type, data=data)

    def read(self, conversation_id: str, after: int, timeout: float) -> list[Event]:
        stream, _ = self._keys(conversation_id)
        return _events(self.redis.xread({stream: f"{after}-0"}, block=_block(timeout), count=500))

    async def aread(self, conversation_id: str, after: int, timeout: float) -> list[Event]:
        """XREAD BLOCK on an asyncio connection: a waiting reader holds no thread."""
        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is None:
            import redis.asyncio

            client = self._async[loop] = redis.asyncio.Redis.from_url(self.url, **self.OPTIONS)
        stream, _ = self._keys(conversation_id)
        return _events(await client.xread({stream: f"{after}-0"}, block=_block(timeout), count=500))

    def last_seq(self, conversation_id: str) -> int:
        return int(self.redis.get(self._keys(conversation_id)[1]) or 0)


def _block(timeout: float) -> int:
    # XREAD BLOCK 0 would block forever; a whole number of milliseconds, at least one.
    return max(1, int(timeout * 1000))


def _events(answer: Any) -> list[Event]:
    events = []
    for _, entries in answer or []:
        for entry_id, fields in entries:
            seq = int(entry_id.split(b"-", 1)[0])
            events.append(Event(seq=seq, type=fields[b"type"].decode(), data=json.loads(fields[b"data"])))
    return events
