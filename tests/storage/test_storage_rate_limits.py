"""``Storage.rate_limit_settings``: where each backend puts rate-limit counters.

The settings are a ``limits`` storage URI and its options; flask-limiter builds its
storage from them (identity/ratelimit.py). On every backend that storage must count and
limit; on the Redis backends the counters must land in the backend's own server or
cluster, so every worker and host on the same storage shares them.
"""

from __future__ import annotations

from typing import Any

from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from storage import Storage
from storage.redis import BaseRedisStorage
from storage.redis.keys import RATE_LIMIT_PREFIX


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
