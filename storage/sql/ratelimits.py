"""Rate-limit counters in the database, shared by every worker and host on it: a
``limits`` storage (``promptsvc+sql://``, registered by ``STORAGE_SCHEME`` the way
``limits`` documents custom storages) over the SQL backend's engine, since ``limits``
has none for SQL.

Moving windows (what promptsvc uses) are a row per request counted; a hit drops the
key's rows that left the window, counts the rest and adds only if the limit has room,
serialized per key (SQLite's writer lock, PostgreSQL's advisory lock) so concurrent
hits never pass the limit. Fixed windows are a counter row per key, one upsert per hit.
Times are ``time.time()``, as in every ``limits`` storage; rows of keys nobody hits
again go every ``SWEEP_EVERY`` hits of a process.
"""

from __future__ import annotations

import time
from typing import Any

from limits.errors import ConfigurationError
from limits.storage import MovingWindowSupport
from limits.storage import Storage as LimitsStorage
from sqlalchemy import Connection, Engine, case, func, insert, select, text
from sqlalchemy import exc as sa_exc

from storage.records import RateLimitSettings
from storage.sql import dialect
from storage.sql.engine import reading, writing
from storage.sql.identity_tables import rate_limit_counters, rate_limit_entries

SCHEME = "promptsvc+sql"
SWEEP_EVERY = 256

_entries = rate_limit_entries.c
_counters = rate_limit_counters.c


class SqlCounters(LimitsStorage, MovingWindowSupport):
    STORAGE_SCHEME = [SCHEME]

    def __init__(
        self,
        uri: str | None = None,
        wrap_exceptions: bool = False,
        *,
        engine: Engine | None = None,
        **options: float | str | bool,
    ) -> None:
        if engine is None:
            raise ConfigurationError(
                f"{SCHEME}:// needs the SQL backend's engine: use the settings "
                "SqlStorage.rate_limit_settings() gives"
            )
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.engine = engine
        self._hits = 0

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return sa_exc.SQLAlchemyError

    def _hit(self, connection: Connection, now: float) -> None:
        """Count a write; every SWEEP_EVERY-th drops every expired row."""
        self._hits += 1
        if self._hits % SWEEP_EVERY == 0:
            connection.execute(rate_limit_entries.delete().where(_entries.expires_at <= now))
            connection.execute(rate_limit_counters.delete().where(_counters.expires_at <= now))

    # -- moving windows

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        now = time.time()
        with writing(self.engine) as connection:
            dialect.serialize(connection, f"rate_limit:{key}")
            self._hit(connection, now)
            connection.execute(
                rate_limit_entries.delete().where(_entries.key == key, _entries.at < now - expiry)
            )
            counted = connection.execute(
                select(func.count()).where(_entries.key == key)
            ).scalar_one()
            if counted + amount > limit:
                return False
            connection.execute(
                insert(rate_limit_entries),
                [{"key": key, "at": now, "expires_at": now + expiry}] * amount,
            )
        return True

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        """The oldest of the newest ``limit`` entries in the window, and their number."""
        now = time.time()
        statement = (
            select(_entries.at)
            .where(_entries.key == key, _entries.at >= now - expiry)
            .order_by(_entries.at.desc())
            .limit(limit)
        )
        with reading(self.engine) as connection:
            times = connection.execute(statement).scalars().all()
        return (times[-1], len(times)) if times else (now, 0)

    # -- fixed windows

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = time.time()
        expired = _counters.expires_at <= now
        with writing(self.engine) as connection:
            self._hit(connection, now)
            statement = dialect.upsert(
                connection,
                rate_limit_counters,
                {"key": key, "count": amount, "expires_at": now + expiry},
                count=case((expired, amount), else_=_counters.count + amount),
                expires_at=case((expired, now + expiry), else_=_counters.expires_at),
            )
            counted: int = connection.execute(statement.returning(_counters.count)).scalar_one()
        return counted

    def _counter(self, key: str) -> Any:
        live = (_counters.key == key, _counters.expires_at > time.time())
        with reading(self.engine) as connection:
            return connection.execute(select(rate_limit_counters).where(*live)).first()

    def get(self, key: str) -> int:
        row = self._counter(key)
        return 0 if row is None else int(row.count)

    def get_expiry(self, key: str) -> float:
        row = self._counter(key)
        return time.time() if row is None else float(row.expires_at)

    # -- upkeep

    def check(self) -> bool:
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except sa_exc.SQLAlchemyError:
            return False
        return True

    def clear(self, key: str) -> None:
        with writing(self.engine) as connection:
            connection.execute(rate_limit_entries.delete().where(_entries.key == key))
            connection.execute(rate_limit_counters.delete().where(_counters.key == key))

    def reset(self) -> int | None:
        """Drop every counter; the number of keys that had one."""
        with writing(self.engine) as connection:
            moving = select(func.count(_entries.key.distinct()))
            fixed = select(func.count()).select_from(rate_limit_counters)
            keys = connection.execute(moving).scalar_one() + connection.execute(fixed).scalar_one()
            connection.execute(rate_limit_entries.delete())
            connection.execute(rate_limit_counters.delete())
        return int(keys)


def settings(engine: Engine) -> RateLimitSettings:
    """Counters in the backend's own database, through its engine (and pool)."""
    return RateLimitSettings(f"{SCHEME}://", {"engine": engine})
