"""The ``redis+cluster://`` URL and what ClusterStorage.from_url builds from it."""

from __future__ import annotations

import socket
import time

import pytest

from storage import StorageUnavailable, storage_from_url
from storage.redis.cluster import ClusterStorage, SlotScript, parse_url
from tests.cluster_support import LocalCluster


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on exit: nothing listens there


def test_parse_several_nodes_and_defaults() -> None:
    options = parse_url("redis+cluster://10.0.0.1:7000,10.0.0.2,redis-3:7002")
    assert options["nodes"] == [("10.0.0.1", 7000), ("10.0.0.2", 6379), ("redis-3", 7002)]
    assert options["username"] is None and options["password"] is None
    assert options["read_from_replicas"] is False
    assert options["socket_timeout"] == options["socket_connect_timeout"] == 0.25


def test_parse_credentials_ipv6_and_options() -> None:
    options = parse_url(
        "redis+cluster://app:s%40cret@[::1]:7000,[fd00::2]/0"
        "?read_from_replicas=TRUE&socket_timeout=0.25&socket_connect_timeout=2"
    )
    assert options["nodes"] == [("::1", 7000), ("fd00::2", 6379)]
    assert (options["username"], options["password"]) == ("app", "s@cret")
    assert options["read_from_replicas"] is True
    assert (options["socket_timeout"], options["socket_connect_timeout"]) == (0.25, 2.0)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://h:7000", "not a redis\\+cluster"),
        ("redis+cluster://h:7000/2", "only database 0"),
        ("redis+cluster://h:7000?read_from_replica=true", "unknown .* option 'read_from_replica'"),
        ("redis+cluster://h:7000?read_from_replicas=maybe", "true or false"),
        ("redis+cluster://h:7000?socket_timeout=0", "seconds"),
        ("redis+cluster://h:7000?socket_timeout=abc", "seconds"),
        ("redis+cluster://h:70000", "bad port"),
        ("redis+cluster://h:7000,:7001", "empty host"),
        ("redis+cluster://", "empty host"),
    ],
)
def test_parse_refuses_what_it_cannot_honour(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_url(url)


def test_no_answering_node_is_storage_unavailable_fast() -> None:
    started = time.monotonic()
    with pytest.raises(StorageUnavailable) as caught:
        ClusterStorage.from_url(f"redis+cluster://127.0.0.1:{closed_port()}")
    assert "127.0.0.1" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert time.monotonic() - started < 30  # not hanging (how fast is bench/'s question)


def test_one_answering_node_is_enough(local_cluster: LocalCluster) -> None:
    url = f"redis+cluster://127.0.0.1:{closed_port()},{local_cluster.nodes[0].address}"
    store = ClusterStorage.from_url(url)
    try:
        store.ping()
        # The whole cluster was discovered from that one node.
        assert {n.port for n in store.client.get_nodes()} == {n.port for n in local_cluster.nodes}
    finally:
        store.close()


def test_from_url_configures_the_client(local_cluster: LocalCluster) -> None:
    store = ClusterStorage.from_url(local_cluster.url + "?socket_timeout=0.3")
    try:
        options = store.client.get_connection_kwargs()
        assert options["socket_timeout"] == 0.3 and options["socket_connect_timeout"] == 0.25
        assert options["decode_responses"] is True
        assert store.client.retry.get_retries() == 0  # a lost reply must not rerun a script
        assert store.replica_client is None
        assert all(isinstance(s, SlotScript) for s in store._scripts.values())
    finally:
        store.close()


def test_storage_from_url_picks_the_cluster(local_cluster: LocalCluster) -> None:
    store = storage_from_url(local_cluster.url)
    try:
        assert isinstance(store, ClusterStorage)
    finally:
        store.close()
