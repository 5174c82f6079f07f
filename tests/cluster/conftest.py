"""Fixtures for the Redis Cluster tests.

The session's local 3-primary cluster comes from tests/cluster_support.py (bound in
tests/conftest.py; skips without redis-server and redis-cli, fails instead under
``PROMPTSVC_TEST_REQUIRE_REDIS=1``). The storage conformance suite runs on the same
cluster as its ``cluster`` backend (tests/storage/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from storage.redis.cluster import ClusterStorage


@pytest.fixture
def cluster_storage(flushed_cluster_url: str) -> Iterator[ClusterStorage]:
    """A ClusterStorage on the emptied session cluster."""
    store = ClusterStorage.from_url(flushed_cluster_url)
    yield store
    store.close()
