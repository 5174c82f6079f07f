"""The change event log on Redis: one stream per org."""

from __future__ import annotations

import time
from typing import Any

from storage.event_records import Event, EventLogBounds
from storage.ids import event_position
from storage.interface import EventStore
from storage.redis import codec, keys
from storage.redis.core import LONGEST_BLOCK, ClientT, RedisCore, guard


class RedisEvents(RedisCore[ClientT], EventStore):
    """The event log: one stream per org, read with XRANGE and XREAD BLOCK."""

    # -- change events

    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        event_position(after)  # InvalidInput for text that is not an id, as on every backend
        with guard():
            entries: Any = self.client.xrange(keys.events(org), min="(" + after, count=limit)
        return codec.events(entries)

    def event_log_bounds(self, org: str) -> EventLogBounds:
        oldest, newest, trimmed = self._run(
            "event_log_bounds", [keys.events(org)], [self.event_log_size]
        )
        return EventLogBounds(oldest or None, newest or None, trimmed == 1)

    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        event_position(after)
        if timeout <= 0:
            return self.events_after(org, after, limit)
        deadline = time.monotonic() + timeout
        # Each XREAD blocks for at most half the socket timeout, so that the client
        # never mistakes a wait for a dead server.
        socket_timeout = self._socket_timeout()
        longest = LONGEST_BLOCK if socket_timeout is None else socket_timeout / 2
        while True:
            remaining = deadline - time.monotonic()
            block = min(remaining, longest)
            with guard():
                # BLOCK 0 would wait forever: at least 1 ms.
                reply: Any = self.client.xread(
                    {keys.events(org): after}, count=limit, block=max(1, int(block * 1000))
                )
            if reply:  # [[stream key, entries]]
                return codec.events(reply[0][1])
            if remaining <= longest:
                return []
