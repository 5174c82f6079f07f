"""Fixtures for the Redis Cluster tests: a local 3-primary cluster for the session.

The cluster itself comes from tests/cluster_support.py (skips without redis-server and
redis-cli, fails instead under ``PROMPTSVC_TEST_REQUIRE_REDIS=1``). ``storage`` and
``redis_storage`` are the storage suite's fixtures (tests/storage/conftest.py) on that
cluster, so test_storage_suite.py can run the suite's tests unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

import cluster_support
import pytest
from cluster_testlib import load_suite_module

from storage.cluster import ClusterStorage

# The cluster fixtures, bound here so pytest finds them for every test in this directory.
local_cluster = cluster_support.local_cluster
redis_cluster_url = cluster_support.redis_cluster_url
flushed_cluster_url = cluster_support.flushed_cluster_url

# The suite's own clock, so time-dependent assertions mean the same thing here.
FakeClock = load_suite_module("conftest").FakeClock


@pytest.fixture
def clock() -> object:
    return FakeClock()


@pytest.fixture
def cluster_storage(flushed_cluster_url: str, clock: object) -> Iterator[ClusterStorage]:
    """A ClusterStorage on the emptied session cluster, on the fake clock."""
    store = ClusterStorage.from_url(flushed_cluster_url, clock=clock)  # type: ignore[arg-type]
    yield store
    store.close()


@pytest.fixture
def storage(cluster_storage: ClusterStorage) -> ClusterStorage:
    return cluster_storage


@pytest.fixture
def redis_storage(cluster_storage: ClusterStorage) -> ClusterStorage:
    return cluster_storage
