"""Shared fixtures: where the real Redis is, whether it must be there, and a fake clock.

``PROMPTSVC_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/15``) names the db the
tests own; they flush only that db. With ``PROMPTSVC_TEST_REQUIRE_REDIS=1`` (set by
``.ci/run``) a missing Redis fails the run instead of skipping.
"""

from __future__ import annotations

import os

import pytest

from tests.clock import FakeClock

# The local Redis Cluster fixtures, for the storage suite and tests/cluster.
from tests.cluster_support import flushed_cluster_url, local_cluster, redis_cluster_url

__all__ = ["flushed_cluster_url", "local_cluster", "redis_cluster_url"]

REDIS_URL = os.environ.get("PROMPTSVC_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
REQUIRE_REDIS = os.environ.get("PROMPTSVC_TEST_REQUIRE_REDIS") == "1"


def _redis_reachable(url: str) -> str | None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        return f"no Redis at {url}: {exc}"
    return None


_REDIS_PROBLEM = _redis_reachable(REDIS_URL)


@pytest.fixture
def redis_url() -> str:
    """The real Redis URL, flushed before the test; skips (or fails in CI) without it."""
    if _REDIS_PROBLEM:
        if REQUIRE_REDIS:
            pytest.fail(f"{_REDIS_PROBLEM} (PROMPTSVC_TEST_REQUIRE_REDIS=1)")
        pytest.skip(_REDIS_PROBLEM)
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    return REDIS_URL


@pytest.fixture
def clock() -> FakeClock:
    """A clock at the current second that moves only when told (tests/storage sets its own)."""
    return FakeClock()
