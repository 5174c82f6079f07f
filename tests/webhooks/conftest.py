"""A storage of each kind the delivery tests run on (memory and real Redis), on a fake
clock so retries come due without waiting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from storage import Storage
from storage.memory import MemoryStorage
from storage.redis import RedisStorage
from tests.clock import FakeClock
from tests.sql_support import sql_storage


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def storage(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[Storage]:
    if request.param == "memory":
        yield MemoryStorage(clock=clock.utc)
        return
    if request.param in ("sqlite", "postgres"):
        sql = sql_storage(request.param, request, needs_identity=False, clock=clock.utc)
        yield sql
        sql.close()
        return
    store = RedisStorage.from_url(request.getfixturevalue("redis_url"), clock=clock.utc)
    yield store
    store.close()
