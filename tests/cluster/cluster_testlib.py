"""Helpers of the Redis Cluster tests (fixtures are in conftest.py)."""

from __future__ import annotations

from storage.redis import keys
from tests.cluster_support import LocalCluster


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
