"""Reading the event log, and waiting for new events.

A waiter is woken at once by a commit of this process (storage/sql/core.py), by
PostgreSQL's ``NOTIFY`` for commits of other processes (one listening connection per
process, :class:`_Listener`), and otherwise looks again every
``dialect.POLL_INTERVAL``: SQLite has no channel between processes, and a listener that
lost its connection misses notifications until it is back.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import Engine, select, tuple_

from storage.event_front import EventFront
from storage.event_records import Event, EventLogBounds
from storage.sql import dialect
from storage.sql.core import Concern, Database, event_id, event_record
from storage.sql.tables import event_logs, events

log = logging.getLogger(__name__)


def events_after(org: str, after: tuple[int, int], limit: int) -> Any:
    """The org's first ``limit`` events after ``after`` (ms, seq)."""
    key = (events.c.ms, events.c.seq)
    return (
        select(events).where(events.c.org == org, tuple_(*key) > after).order_by(*key).limit(limit)
    )


class _Listener:
    """A thread that LISTENs on PostgreSQL and wakes this process's waiters."""

    def __init__(self, engine: Engine, woken: threading.Condition) -> None:
        self._engine = engine
        self._woken = woken
        self._stopped = threading.Event()
        threading.Thread(target=self._run, name="promptsvc-listen", daemon=True).start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._listen()
            except Exception as exc:  # the server went away: waiters poll meanwhile
                log.debug("event listener lost its connection: %s", exc)
            self._stopped.wait(1.0)

    def _listen(self) -> None:
        raw = self._engine.raw_connection()
        try:
            driver: Any = raw.driver_connection
            driver.autocommit = True
            driver.execute(f"LISTEN {dialect.EVENTS_CHANNEL}")
            while not self._stopped.is_set():
                for _ in driver.notifies(timeout=1.0, stop_after=1):
                    with self._woken:
                        self._woken.notify_all()
        finally:
            raw.invalidate()  # a connection in LISTEN mode goes back to no pool

    def stop(self) -> None:
        self._stopped.set()


class SqlEvents(Concern, EventFront):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        postgres = db.engine.dialect.name == "postgresql"
        self._listener = _Listener(db.engine, db.appended) if postgres else None

    def stop_listener(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None

    def _read_events(self, org: str, after: tuple[int, int], limit: int) -> list[Event]:
        with self.db.read() as connection:
            rows = connection.execute(events_after(org, after, limit)).all()
        return [event_record(row) for row in rows]

    def _await_events(self, org: str, after: tuple[int, int], seconds: float) -> None:
        with self.db.appended:
            self.db.appended.wait(min(seconds, dialect.POLL_INTERVAL))

    def event_log_bounds(self, org: str) -> EventLogBounds:
        with self.db.read() as connection:
            trimmed = connection.execute(
                select(event_logs.c.trimmed).where(event_logs.c.org == org)
            ).scalar()
            ends = []
            for order in ((events.c.ms, events.c.seq), (events.c.ms.desc(), events.c.seq.desc())):
                row = connection.execute(
                    select(events.c.ms, events.c.seq)
                    .where(events.c.org == org)
                    .order_by(*order)
                    .limit(1)
                ).first()
                ends.append(None if row is None else event_id(row.ms, row.seq))
        return EventLogBounds(ends[0], ends[1], bool(trimmed))
