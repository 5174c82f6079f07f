"""``?read_from_replicas=true``: the three read paths go to replicas, nothing else does.

Runs on its own cluster with one replica per primary (6 processes, this module only).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from storage import ApiKey, NoProductionVersion
from storage.redis.cluster import ClusterStorage
from tests.cluster.cluster_testlib import org_on_each_primary
from tests.cluster_support import LocalCluster, Node, running_cluster

USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


@pytest.fixture(scope="module")
def replicated() -> Iterator[LocalCluster]:
    yield from running_cluster(primaries=3, replicas_per_primary=1)


@pytest.fixture
def replica_storage(replicated: LocalCluster) -> Iterator[ClusterStorage]:
    for node in replicated.nodes:
        if not node.running():
            replicated.restart_node(node)
    replicated.flush()
    store = ClusterStorage.from_url(replicated.url + "?read_from_replicas=true")
    yield store
    store.close()


def roles(cluster: LocalCluster) -> tuple[list[Node], list[Node]]:
    primaries = cluster.primary_nodes()
    return primaries, [n for n in cluster.nodes if n not in primaries]


def calls(node: Node) -> dict[str, int]:
    """Commands this node ran since the last reset, by name."""
    with node.client() as c:
        stats = c.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(s["calls"]) for name, s in stats.items()}


def reset_stats(cluster: LocalCluster) -> None:
    for node in cluster.nodes:
        with node.client() as c:
            c.config_resetstat()


def seed(store: ClusterStorage, cluster: LocalCluster) -> list[str]:
    orgs = list(org_on_each_primary(cluster).values())
    for org in orgs:
        store.create_prompt(org, "greeting")
        store.create_version(org, "greeting", "one {{name}}", USER)
        store.create_version(org, "greeting", "two {{name}}", USER)
        store.promote(org, "greeting", "1", USER)
        store.add_api_key(ApiKey(org, "reader", "hash", "Service Read", USER, None, store.clock()))
    cluster.wait_replicated()
    return orgs


def test_the_three_reads_are_served_by_replicas(
    replicated: LocalCluster, replica_storage: ClusterStorage
) -> None:
    orgs = seed(replica_storage, replicated)
    primaries, replicas = roles(replicated)
    reset_stats(replicated)

    for org in orgs:
        for _ in range(4):
            assert replica_storage.get_production(org, "greeting").version == 1
            assert replica_storage.get_latest(org, "greeting").content == "two {{name}}"
            assert replica_storage.get_version(org, "greeting", "2").status == "draft"
        replica_storage.delete_prompt(org, "greeting")  # writes: on the primary
        replica_storage.create_prompt(org, "greeting")
        replicated.wait_replicated()
        with pytest.raises(NoProductionVersion):  # the replica has the new state
            replica_storage.get_production(org, "greeting")

    served = sum(calls(n).get("evalsha_ro", 0) for n in replicas)
    assert served >= len(orgs) * (12 + 1)  # a NOSCRIPT on a fresh replica counts too
    assert all(calls(n).get("evalsha_ro", 0) > 0 for n in replicas)  # every shard's replica
    assert sum(calls(n).get("evalsha_ro", 0) for n in primaries) == 0


def test_everything_else_stays_on_the_primaries(
    replicated: LocalCluster, replica_storage: ClusterStorage
) -> None:
    orgs = seed(replica_storage, replicated)
    primaries, replicas = roles(replicated)
    reset_stats(replicated)

    for org in orgs:
        replica_storage.promote(org, "greeting", "2", USER)
        assert replica_storage.list_versions(org, "greeting").items[0].version == 2
        assert replica_storage.list_history(org, "greeting").items[0].version_number == 2
        assert replica_storage.get_prompt(org, "greeting").production_version == 2
        replica_storage.revoke_api_key(org, "reader")
        key = replica_storage.get_api_key(org, "reader")  # revoked at once
        assert key is not None and key.revoked
        assert replica_storage.org_exists(org)
    assert replica_storage.signing_keys() == []

    for node in replicas:  # replicas only apply the primaries' effects
        ran = calls(node)
        assert not {"evalsha", "evalsha_ro", "hgetall", "exists", "lrange"} & set(ran), ran
    assert sum(calls(n).get("evalsha", 0) for n in primaries) >= 4 * len(orgs)


def test_an_unreachable_replica_falls_back_to_its_primary(
    replicated: LocalCluster, replica_storage: ClusterStorage
) -> None:
    orgs = seed(replica_storage, replicated)
    _, replicas = roles(replicated)
    replicated.stop_node(replicas[0])
    for org in orgs:
        for _ in range(3):
            assert replica_storage.get_production(org, "greeting").version == 1
            assert replica_storage.get_version(org, "greeting", "1").status == "published"


def test_without_replicas_the_option_reads_primaries(local_cluster: LocalCluster) -> None:
    local_cluster.flush()
    store = ClusterStorage.from_url(local_cluster.url + "?read_from_replicas=true")
    try:
        store.create_prompt("acme", "greeting")
        store.create_version("acme", "greeting", "hello", USER)
        store.promote("acme", "greeting", "1", USER)
        assert store.get_production("acme", "greeting").version == 1
        assert store.get_latest("acme", "greeting").status == "published"
    finally:
        store.close()
