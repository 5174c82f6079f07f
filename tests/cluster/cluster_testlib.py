"""Helpers of the Redis Cluster tests (fixtures are in conftest.py).

``org_on_each_primary`` picks one org per shard; ``load_suite_module`` loads a module of
the storage suite for test_storage_suite.py; the two ``NEEDS_*`` marks are feature
probes for hooks this directory needs from other packages: a test so marked is an
expected failure while the hook is missing and runs normally (strict) once it is there.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import redis
from cluster_support import LocalCluster
from redis.exceptions import RedisClusterException

from storage import keys, storage_from_url
from storage import redis as redis_backend
from storage.base import StorageUnavailable

SUITE = Path(__file__).resolve().parent.parent / "storage"


def load_suite_module(name: str) -> ModuleType:
    """A module of tests/storage, loaded under its own name for re-use here."""
    spec = importlib.util.spec_from_file_location(f"storage_suite_{name}", SUITE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _storage_from_url_knows_clusters() -> bool:
    # Port 1 on loopback: nothing listens, so a backend that knows the scheme says
    # StorageUnavailable while one that does not says ValueError.
    try:
        storage_from_url("redis+cluster://127.0.0.1:1")
    except StorageUnavailable:
        return True
    except ValueError:
        return False
    return True


# For tests that reach the cluster through PROMPTSVC_STORAGE_URL (storage_from_url), which
# storage/__init__.py must dispatch to storage.cluster. Strict: once it does, they run.
NEEDS_CLUSTER_URLS = pytest.mark.xfail(
    not _storage_from_url_knows_clusters(),
    reason="storage_from_url (storage/__init__.py) does not dispatch redis+cluster:// yet",
    strict=True,
)


def _redis_backend_maps_cluster_outages() -> bool:
    # RedisCluster reports "no node reachable" as a RedisClusterException chained to the
    # connection error, not as a RedisError; storage/redis.py's _guard must map it too.
    guard = getattr(redis_backend, "_guard", None)
    if guard is None:
        return False
    try:
        with guard():
            raise RedisClusterException("Redis Cluster cannot be connected") from (
                redis.ConnectionError("refused")
            )
    except StorageUnavailable:
        return True
    except RedisClusterException:
        return False
    return False


NEEDS_CLUSTER_OUTAGE_MAPPING = pytest.mark.xfail(
    not _redis_backend_maps_cluster_outages(),
    reason="storage/redis.py _guard does not map RedisCluster's 'cannot be connected' "
    "RedisClusterException (and SlotNotCoveredError) to StorageUnavailable yet",
    strict=True,
)


def org_on_each_primary(cluster: LocalCluster) -> dict[int, str]:
    """Primary port -> an org slug whose keys that primary holds (one org per shard)."""
    found: dict[int, str] = {}
    primaries = {n.port for n in cluster.primary_nodes()}
    for i in range(1000):
        org = f"org-{i}"
        port = cluster.node_for_slot(cluster.keyslot(keys.names(org))).port
        found.setdefault(port, org)
        if set(found) == primaries:
            return found
    raise AssertionError("no org found for some primary")
