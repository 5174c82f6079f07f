"""The change event log on Redis: one stream per org, read with XRANGE and XREAD BLOCK."""

from __future__ import annotations

from typing import Any

import redis

from storage.event_front import EventFront
from storage.event_records import Event, EventLogBounds
from storage.ids import event_id
from storage.interface import EventStore
from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore, guard

# The longest XREAD BLOCK when the client has no socket timeout to stay under.
LONGEST_BLOCK = 5.0


class RedisEvents(RedisCore[ClientT], EventFront, EventStore):
    def _read_events(self, org: str, after: tuple[int, int], limit: int) -> list[Event]:
        with guard():
            entries: Any = self.client.xrange(keys.events(org), "(" + event_id(*after), count=limit)
        return codec.events(entries)

    def _await_events(self, org: str, after: tuple[int, int], seconds: float) -> None:
        # At most half the socket timeout, so the client never takes a wait for a dead
        # server; BLOCK 0 would wait forever: at least 1 ms.
        socket_timeout = self.client.get_connection_kwargs().get("socket_timeout")
        longest = LONGEST_BLOCK if socket_timeout is None else socket_timeout / 2
        block = max(1, int(min(seconds, longest) * 1000))
        with guard():
            self.client.xread({keys.events(org): event_id(*after)}, count=1, block=block)

    def event_log_bounds(self, org: str) -> EventLogBounds:
        """XINFO STREAM, one command: the newest id is the last one ever added, even of a
        log trimmed empty. Redis before 7.0 does not count the entries ever added: there
        a log ``event_log_size`` long is taken to have dropped some."""
        try:
            with guard():
                info: Any = self.client.xinfo_stream(keys.events(org))
        except redis.ResponseError as exc:
            if "no such key" not in str(exc):
                raise
            return EventLogBounds(None, None, False)
        length, added = info["length"], info.get("entries-added")
        trimmed = added > length if added is not None else length >= self.event_log_size
        oldest = info["first-entry"][0] if info.get("first-entry") else None
        return EventLogBounds(oldest, info["last-generated-id"], trimmed)
