"""Node restarts and outages on a real cluster: scripts reload, other shards carry on.

These stop, freeze and restart nodes of the session cluster; ``flushed_cluster_url``
brings every node back before the next test even when one fails half-way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from redis.cluster import RedisCluster

from storage import StorageUnavailable
from storage.redis import keys
from storage.redis.cluster import ClusterStorage
from tests.cluster.cluster_testlib import org_on_each_primary
from tests.cluster_support import LocalCluster

USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
T = TypeVar("T")
# A deadline, not a speed (bench/ measures that): without its socket timeout a call to
# a frozen node would wait for ever; with it, it ends, however loaded the machine.
ANSWERED_WITHIN = 15.0


def timed(call: Callable[[], T]) -> tuple[T | Exception, float]:
    started = time.monotonic()
    try:
        result: T | Exception = call()
    except Exception as exc:  # the test decides which errors are right
        result = exc
    return result, time.monotonic() - started


def seed(store: ClusterStorage, orgs: list[str]) -> None:
    for org in orgs:
        store.create_prompt(org, "greeting")
        store.create_version(org, "greeting", "v1 {{name}}", USER)
        store.create_version(org, "greeting", "v2 {{name}}", USER)
        store.promote(org, "greeting", "1", USER)


def test_scripts_run_again_after_a_primary_restart(
    local_cluster: LocalCluster, cluster_storage: ClusterStorage
) -> None:
    victim_port, org = next(iter(org_on_each_primary(local_cluster).items()))
    victim = next(n for n in local_cluster.nodes if n.port == victim_port)
    seed(cluster_storage, [org])
    apply_sha = cluster_storage._scripts["apply_change"].sha
    with victim.client() as c:
        assert c.script_exists(apply_sha) == [True]

    local_cluster.stop_node(victim, save=True)  # keeps its data, loses its script cache
    local_cluster.restart_node(victim)
    with victim.client() as c:
        assert c.script_exists(apply_sha) == [False]

    # The same storage object: its pooled connection to the old process is dead and the
    # new process answers NOSCRIPT; redis-py reconnects and loads the script again.
    promotion = cluster_storage.promote(org, "greeting", "2", USER, notes="after restart")
    assert (promotion.record.previous_version, promotion.version.version) == (1, 2)
    assert cluster_storage.get_production(org, "greeting").version == 2
    assert cluster_storage.get_version(org, "greeting", "1").status == "archived"
    with victim.client() as c:
        assert c.script_exists(apply_sha) == [True]


@pytest.mark.parametrize("outage", ["stopped", "frozen"])
def test_a_down_primary_fails_its_orgs_fast_and_no_others(
    local_cluster: LocalCluster, cluster_storage: ClusterStorage, outage: str
) -> None:
    """``stopped``: the process is gone (connection refused). ``frozen``: SIGSTOP, the
    port still accepts connections but nothing answers, so only the socket timeout
    (0.25 s, two attempts) ends the wait."""
    org_by_port = org_on_each_primary(local_cluster)
    seed(cluster_storage, list(org_by_port.values()))
    victim_port = next(iter(org_by_port))
    victim = next(n for n in local_cluster.nodes if n.port == victim_port)
    down_org = org_by_port[victim_port]
    up_orgs = [org for port, org in org_by_port.items() if port != victim_port]

    if outage == "stopped":
        local_cluster.stop_node(victim, save=True)
    else:
        local_cluster.freeze_node(victim)
    try:
        for _ in range(3):  # not only the first request after the outage
            result, took = timed(lambda: cluster_storage.get_production(down_org, "greeting"))
            assert isinstance(result, StorageUnavailable), result
            assert "127.0.0.1" not in str(result) and str(victim_port) not in str(result)
            assert took < ANSWERED_WITHIN, f"{outage}: 503 after {took:.2f}s"
            write, took = timed(lambda: cluster_storage.promote(down_org, "greeting", "2", USER))
            assert isinstance(write, StorageUnavailable), write
            assert took < ANSWERED_WITHIN
            # Readiness asks whether the cluster answers, not whether every shard does.
            ready, took = timed(cluster_storage.ping)
            assert ready is None and took < ANSWERED_WITHIN
            for org in up_orgs:
                version, took = timed(lambda o=org: cluster_storage.get_production(o, "greeting"))  # type: ignore[misc]
                assert not isinstance(version, Exception), version
                assert version.version == 1
                assert took < ANSWERED_WITHIN
                # Writes too; the previous version goes back to draft for the next round.
                cluster_storage.promote(org, "greeting", "2", USER, archive_previous=False)
                cluster_storage.promote(org, "greeting", "1", USER, archive_previous=False)
    finally:
        if outage == "stopped":
            local_cluster.restart_node(victim)
        else:
            local_cluster.thaw_node(victim)

    # Back: the same storage object serves every org again, the down org's data intact.
    for org in org_by_port.values():
        assert cluster_storage.get_production(org, "greeting").version == 1
    cluster_storage.promote(down_org, "greeting", "2", USER)
    assert cluster_storage.get_production(down_org, "greeting").version == 2


def test_the_whole_cluster_down_is_storage_unavailable(
    local_cluster: LocalCluster, cluster_storage: ClusterStorage
) -> None:
    seed(cluster_storage, ["acme"])
    for node in local_cluster.nodes:
        local_cluster.stop_node(node, save=True)
    try:
        for call in (
            lambda: cluster_storage.get_production("acme", "greeting"),
            cluster_storage.ping,
            lambda: cluster_storage.get_api_key("acme", "reader"),
            cluster_storage.signing_keys,
        ):
            result, took = timed(call)
            assert isinstance(result, StorageUnavailable), repr(result)
            assert took < ANSWERED_WITHIN
        with pytest.raises(StorageUnavailable):
            ClusterStorage.from_url(local_cluster.url)
    finally:
        for node in local_cluster.nodes:
            node.start()
        for node in local_cluster.nodes:
            node.wait_answering(time.monotonic() + 10)
        local_cluster.wait_healthy()
    assert cluster_storage.get_production("acme", "greeting").version == 1


def test_a_read_on_a_stale_slot_map_is_rerouted(
    local_cluster: LocalCluster, cluster_storage: ClusterStorage
) -> None:
    """As after a resharding or a failover: the slot map names a primary that no
    longer serves the org's slot. The read lane's MOVED hands the read to the cluster
    client, which follows it and corrects the map; the next read takes the lane again."""
    org = next(iter(org_on_each_primary(local_cluster).values()))
    seed(cluster_storage, [org])
    client = cluster_storage.client
    assert isinstance(client, RedisCluster)
    slot = client.keyslot(keys.names(org))
    right = client.nodes_manager.get_node_from_slot(slot)
    wrong = next(n for n in client.get_primaries() if n.name != right.name)
    client.nodes_manager.slots_cache[slot] = [wrong]

    assert cluster_storage.get_production(org, "greeting").version == 1
    assert client.nodes_manager.get_node_from_slot(slot).name == right.name
    assert cluster_storage.get_production(org, "greeting").version == 1
    assert right.name in cluster_storage._lanes
