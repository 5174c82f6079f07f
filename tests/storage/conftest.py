"""The ``storage`` fixture: every conformance test runs on every backend.

``memory`` (dicts under a lock), ``redis`` (the Redis backend and its Lua scripts on the
real server at ``PROMPTSVC_TEST_REDIS_URL``, flushed before each test; skipped without a
server, or failed under ``PROMPTSVC_TEST_REQUIRE_REDIS=1``) and ``cluster`` (the same backend on a
local 3-primary Redis Cluster the tests start themselves, tests/cluster_support.py),
``sqlite`` (the SQL backend on a file of the test's own, copied from one migrated once
per session) and ``postgres`` (the SQL backend on PostgreSQL at
``PROMPTSVC_TEST_POSTGRES_URL``, in a schema of the session's own, emptied before each
test; skipped without a server, or failed under ``PROMPTSVC_TEST_REQUIRE_POSTGRES=1``;
tests/sql_support.py). ``redis_storage`` and ``sql_storage`` give one family of backends,
for checks of its own.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from storage import Storage
from storage.memory import MemoryStorage
from storage.redis import BaseRedisStorage, RedisStorage
from storage.redis.cluster import ClusterStorage
from storage.sql.storage import SqlStorage
from tests.clock import FakeClock
from tests.sql_support import PostgresSchema

# Not fakeredis: it runs the same RedisStorage as the real server, which CI requires
# (tests of failures only fakeredis can stage build their own, test_storage_redis.py).
REDIS_BACKENDS = [
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("cluster", marks=pytest.mark.redis),
]
SQL_BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
BACKENDS = ["memory", *REDIS_BACKENDS, *SQL_BACKENDS]


@pytest.fixture
def clock() -> FakeClock:
    """A fixed instant with microseconds, so the tests see timestamps keep them.

    Storage takes ``clock.utc``.
    """
    return FakeClock(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC))


def make_storage(backend: str, clock: FakeClock, request: pytest.FixtureRequest) -> Storage:
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = request.getfixturevalue("tmp_path") / "promptsvc.db"
        shutil.copyfile(template, path)
        return SqlStorage.from_url(f"sqlite:///{path}", clock=clock.utc)
    if backend == "postgres":
        schema: PostgresSchema = request.getfixturevalue("postgres_schema")
        schema.empty()
        return SqlStorage.from_url(schema.url, clock=clock.utc)
    if backend == "memory":
        return MemoryStorage(clock=clock.utc)
    if backend == "cluster":
        return ClusterStorage.from_url(
            request.getfixturevalue("flushed_cluster_url"), clock=clock.utc
        )
    return RedisStorage.from_url(request.getfixturevalue("redis_url"), clock=clock.utc)


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[Storage]:
    """A fresh, empty storage of each backend, on the fake clock."""
    store = make_storage(request.param, clock, request)
    yield store
    store.close()


@pytest.fixture(params=REDIS_BACKENDS)
def redis_storage(
    request: pytest.FixtureRequest, clock: FakeClock
) -> Iterator[BaseRedisStorage[Any]]:
    """The Redis backends only (real, cluster), for Redis-specific checks."""
    store = make_storage(request.param, clock, request)
    assert isinstance(store, BaseRedisStorage)
    yield store
    store.close()


@pytest.fixture(params=SQL_BACKENDS)
def sql_storage(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[SqlStorage]:
    """The SQL backend only (SQLite, PostgreSQL), for SQL-specific checks."""
    store = make_storage(request.param, clock, request)
    assert isinstance(store, SqlStorage)
    yield store
    store.close()
