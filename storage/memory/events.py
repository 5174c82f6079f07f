"""The change event log in memory."""

from __future__ import annotations

from storage.event_records import Event, EventLogBounds
from storage.ids import event_position
from storage.interface import EventStore
from storage.memory.core import MemoryCore


class MemoryEvents(MemoryCore, EventStore):
    """The event log: a bounded deque per org; waiters sleep on the lock."""

    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        position = event_position(after)
        with self._lock:
            return self._events_after(org, position, limit)

    def event_log_bounds(self, org: str) -> EventLogBounds:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None or not org_state.events:
                return EventLogBounds(None, None)
            events = org_state.events
            return EventLogBounds(events[0].id, events[-1].id, org_state.events_dropped)

    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        position = event_position(after)
        with self._appended:
            found: list[Event] = []

            def arrived() -> bool:
                found[:] = self._events_after(org, position, limit)
                return bool(found)

            self._appended.wait_for(arrived, timeout)
            return found
