"""``Storage.rate_limit_settings``: where each backend puts rate-limit counters.

The settings are a ``limits`` storage URI and its options; flask-limiter builds its
storage from them (identity/ratelimit.py). On every backend that storage must count and
limit; on the Redis backends the counters must land in the backend's own server or
cluster, and on SQL in the backend's own database (a ``limits`` storage of ours), so
every worker and host on the same storage shares them.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from limits import parse
from limits.errors import ConfigurationError
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from sqlalchemy import Table, func, select

from storage import Storage
from storage.redis import BaseRedisStorage
from storage.redis.keys import RATE_LIMIT_PREFIX
from storage.sql import ratelimits
from storage.sql.identity_tables import rate_limit_counters, rate_limit_entries
from storage.sql.ratelimits import SqlCounters
from storage.sql.storage import SqlStorage
from tests.clock import FakeClock
from tests.storage.test_storage_concurrency import all_at_once


def limiter_on(store: Storage) -> MovingWindowRateLimiter:
    settings = store.rate_limit_settings()
    counters = storage_from_string(settings.uri, **settings.options)
    assert counters.check()
    return MovingWindowRateLimiter(counters)


def test_the_settings_give_a_limiter_that_counts(storage: Storage) -> None:
    limiter = limiter_on(storage)
    limit = parse("2/minute")
    assert [limiter.hit(limit, "org/client") for _ in range(3)] == [True, True, False]
    assert limiter.hit(limit, "org/other")  # another key has its own window


def test_counters_live_in_the_backends_own_redis(redis_storage: BaseRedisStorage[Any]) -> None:
    limiter = limiter_on(redis_storage)
    assert limiter.hit(parse("5/minute"), "org/client")
    found = list(redis_storage.client.scan_iter(match=f"{RATE_LIMIT_PREFIX}*"))
    assert len(found) == 1


# -- the SQL backend's own limits storage (storage/sql/ratelimits.py)


def another_worker(store: SqlStorage) -> SqlStorage:
    """A second SqlStorage on the same database, with its own engine and connections,
    as another gunicorn worker (or host) has."""
    return SqlStorage.from_url(store.engine.url.render_as_string(hide_password=False))


def counters_of(store: SqlStorage) -> SqlCounters:
    settings = store.rate_limit_settings()
    counters = storage_from_string(settings.uri, **settings.options)
    assert isinstance(counters, SqlCounters)
    return counters


def rows(store: SqlStorage, table: Table) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


def test_sql_counters_are_shared_by_every_worker(sql_storage: SqlStorage) -> None:
    other = another_worker(sql_storage)
    try:
        first, second = limiter_on(sql_storage), limiter_on(other)
        limit = parse("3/minute")
        assert first.hit(limit, "org/client") and second.hit(limit, "org/client")
        assert first.hit(limit, "org/client")
        assert not second.hit(limit, "org/client") and not first.hit(limit, "org/client")
        assert second.get_window_stats(limit, "org/client").remaining == 0
    finally:
        other.close()
    assert rows(sql_storage, rate_limit_entries) == 3


def test_concurrent_hits_never_pass_the_limit(sql_storage: SqlStorage) -> None:
    workers = [sql_storage, *(another_worker(sql_storage) for _ in range(3))]
    limiters = [limiter_on(store) for store in workers]
    limit = parse("10/minute")
    try:
        results = all_at_once(
            16, lambda i: [limiters[i % 4].hit(limit, "org/client") for _ in range(3)]
        )
    finally:
        for store in workers[1:]:
            store.close()
    assert not [r for r in results if isinstance(r, Exception)]
    granted = [hit for result in results if isinstance(result, list) for hit in result]
    assert len(granted) == 48 and granted.count(True) == 10


@pytest.fixture
def counters_clock(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> FakeClock:
    """The SQL counters' real clock replaced by the fake one: a window ends when the test
    moves the clock, not when a loaded machine happens to take a second between hits."""
    monkeypatch.setattr(ratelimits, "time", SimpleNamespace(time=clock))
    return clock


def test_entries_leave_the_moving_window(
    sql_storage: SqlStorage, counters_clock: FakeClock
) -> None:
    counters = counters_of(sql_storage)
    limiter = MovingWindowRateLimiter(counters)
    limit = parse("2/second")
    assert limiter.hit(limit, "k") and limiter.hit(limit, "k") and not limiter.hit(limit, "k")
    start, counted = counters.get_moving_window(limit.key_for("k"), 2, 1)
    assert counted == 2 and start == counters_clock()
    counters_clock.advance(1.05)
    assert counters.get_moving_window(limit.key_for("k"), 2, 1)[1] == 0
    assert limiter.hit(limit, "k")
    # The entries that left the window went when the key was hit again.
    assert rows(sql_storage, rate_limit_entries) == 1
    assert not counters.acquire_entry("k2", 2, 60, amount=3)  # more than the limit at once


def test_fixed_window_counters(sql_storage: SqlStorage, counters_clock: FakeClock) -> None:
    counters = counters_of(sql_storage)
    assert counters.incr("k", 1) == 1 and counters.incr("k", 1, amount=2) == 3
    assert counters.get("k") == 3
    assert counters.get_expiry("k") == counters_clock() + 1
    assert FixedWindowRateLimiter(counters).hit(parse("5/minute"), "other")
    counters_clock.advance(1.05)
    assert counters.get("k") == 0  # the window ended
    assert counters.incr("k", 60) == 1  # a new window, with its own expiry
    assert counters.get_expiry("k") == counters_clock() + 60


def test_clear_and_reset(sql_storage: SqlStorage) -> None:
    counters = counters_of(sql_storage)
    counters.incr("fixed", 60)
    counters.acquire_entry("moving", 5, 60)
    counters.acquire_entry("moving", 5, 60)
    counters.acquire_entry("other", 5, 60)
    counters.clear("fixed")
    assert counters.get("fixed") == 0
    assert counters.get_moving_window("moving", 5, 60)[1] == 2
    assert counters.reset() == 2  # the two moving-window keys
    assert counters.get_moving_window("moving", 5, 60)[1] == 0
    assert rows(sql_storage, rate_limit_entries) == rows(sql_storage, rate_limit_counters) == 0


def test_expired_rows_of_keys_nobody_hits_again_are_swept(
    sql_storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ratelimits, "SWEEP_EVERY", 3)
    counters = counters_of(sql_storage)
    counters.acquire_entry("gone", 5, 0)  # expires at once
    counters.incr("gone too", 0)
    assert rows(sql_storage, rate_limit_entries) == rows(sql_storage, rate_limit_counters) == 1
    counters.acquire_entry("kept", 5, 60)  # the third hit sweeps
    assert rows(sql_storage, rate_limit_entries) == 1 and counters.check()
    assert rows(sql_storage, rate_limit_counters) == 0


def test_the_sql_scheme_needs_the_backends_engine() -> None:
    with pytest.raises(ConfigurationError, match="needs the SQL backend's engine"):
        storage_from_string(f"{ratelimits.SCHEME}://")
