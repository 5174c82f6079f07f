"""Orgs spread over the shards; each org's data stays on one of them."""

from __future__ import annotations

from storage import ApiKey
from storage.redis import keys
from storage.redis.cluster import ClusterStorage
from tests.cluster_support import LocalCluster

USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
ORGS = [f"team-{i}" for i in range(12)]


def fill(store: ClusterStorage, org: str) -> None:
    store.create_prompt(org, "greeting")
    for i in range(3):
        store.create_version(org, "greeting", f"Hi {{{{name}}}} #{i}", USER)
    store.promote(org, "greeting", "2", USER, notes="go")
    store.add_api_key(ApiKey(org, "reader", "hash", "Service Read", USER, None, store.clock()))


def org_of(key: str) -> str:
    return key.split("{", 1)[1].split("}", 1)[0]


def test_orgs_land_on_different_shards(
    local_cluster: LocalCluster, cluster_storage: ClusterStorage
) -> None:
    for org in ORGS:
        fill(cluster_storage, org)

    # Which primary actually holds each org's keys (SCAN on every node, no client routing).
    holders: dict[str, set[int]] = {}
    key_count: dict[str, int] = {}
    for node in local_cluster.primary_nodes():
        with node.client() as c:
            for key in c.scan_iter(match="ps:*", count=1000):
                holders.setdefault(org_of(key), set()).add(node.port)
                key_count[org_of(key)] = key_count.get(org_of(key), 0) + 1

    assert set(ORGS) <= set(holders)
    for org in ORGS:
        # All of one org's keys are on one primary: the one CLUSTER KEYSLOT names.
        assert len(holders[org]) == 1, holders[org]
        slot = local_cluster.keyslot(keys.names(org))
        assert holders[org] == {local_cluster.node_for_slot(slot).port}
        assert key_count[org] > 8  # prompt, versions, indexes, history, API key
    used = set().union(*(holders[org] for org in ORGS))
    assert used == {n.port for n in local_cluster.primary_nodes()}  # all 3 shards in use


def test_every_key_of_an_org_hashes_to_one_slot(
    local_cluster: LocalCluster, cluster_storage: ClusterStorage
) -> None:
    fill(cluster_storage, "acme")
    node = local_cluster.node_for_slot(local_cluster.keyslot(keys.names("acme")))
    with node.client() as c:
        org_keys = list(c.scan_iter(match="ps:{acme}:*", count=1000))
        slots = {int(c.execute_command("CLUSTER", "KEYSLOT", k)) for k in org_keys}
        (slot,) = slots
        assert int(c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)) == len(org_keys)


def test_reads_follow_the_org_to_its_shard(
    local_cluster: LocalCluster, cluster_storage: ClusterStorage
) -> None:
    for org in ORGS:
        fill(cluster_storage, org)
    for org in ORGS:
        version = cluster_storage.get_production(org, "greeting")
        assert (version.version, version.status) == (2, "published")
        assert cluster_storage.get_latest(org, "greeting").version == 3
        assert [p.name for p in cluster_storage.list_prompts(org).items] == ["greeting"]
        assert cluster_storage.list_history(org, "greeting").items[0].notes == "go"
        assert cluster_storage.org_exists(org)
