"""``SqlStorage``: the SQL backend's concerns combined (SQLite and PostgreSQL)."""

from __future__ import annotations

from sqlalchemy import Engine, text

from storage.interface import Storage
from storage.sql import schema
from storage.sql.archive import SqlArchive
from storage.sql.engine import describe, make_engine
from storage.sql.events import SqlEvents
from storage.sql.identity import SqlIdentity
from storage.sql.ratelimits import SqlRateLimits
from storage.sql.reviews import SqlReviews
from storage.sql.rollouts import SqlRollouts
from storage.sql.sessions import SqlSessions
from storage.sql.webhooks import SqlWebhooks
from storage.times import Clock, utcnow


class SqlStorage(
    SqlReviews,
    SqlRollouts,
    SqlEvents,
    SqlWebhooks,
    SqlIdentity,
    SqlSessions,
    SqlArchive,
    SqlRateLimits,
    Storage,
):
    """Everything promptsvc keeps, in SQLite or PostgreSQL (storage/sql/tables.py)."""

    def __init__(self, engine: Engine, clock: Clock = utcnow) -> None:
        super().__init__(engine, clock)
        self._start_listener()

    @classmethod
    def from_url(cls, url: str, clock: Clock = utcnow) -> SqlStorage:
        """Open the database at ``url``, bringing its schema up to date (under a lock:
        one process upgrades, the others wait). SchemaError when it cannot be used."""
        engine = make_engine(url)
        try:
            schema.upgrade(engine, describe(url))
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, clock=clock)

    def ping(self) -> None:
        self._read_one(text("SELECT 1"))

    def close(self) -> None:
        self._stop_listener()
        self._lane.close()
        self.engine.dispose()
