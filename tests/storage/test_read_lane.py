"""The read lane (storage/redis/read_lane.py) on the real Redis: reconnects, reloads, drops.

Each test reads through ``RedisStorage.get_production``, which is what the read API
calls, and looks at the lane's connections from the server's side (CLIENT LIST).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from storage import StorageUnavailable
from storage.redis import RedisStorage

pytestmark = pytest.mark.redis

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
LANE = "promptsvc-lane-test"  # client name of the storage under test


@pytest.fixture
def admin(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def make_store(redis_url: str, **options: str) -> RedisStorage:
    query = "&".join(f"{k}={v}" for k, v in {"client_name": LANE, **options}.items())
    store = RedisStorage.from_url(f"{redis_url}?{query}")
    store.create_prompt(ORG, "greeting")
    for content in ("one", "two"):
        store.create_version(ORG, "greeting", content, USER)
    store.promote(ORG, "greeting", "1", USER)
    return store


def lane_connections(admin: redis.Redis, store: RedisStorage) -> list[dict[str, str]]:
    """The lane's connections, as the server lists them: named LANE, last command
    EVALSHA. The client's pool (which also ran EVALSHA, for the writes) sends a PING
    first so that its connection does not count."""
    store.client.ping()
    return [c for c in admin.client_list() if c["name"] == LANE and c["cmd"] == "evalsha"]


def test_reads_reuse_one_connection(redis_url: str, admin: redis.Redis) -> None:
    store = make_store(redis_url)
    for _ in range(20):
        assert store.get_production(ORG, "greeting").version == 1
    assert len(lane_connections(admin, store)) == 1
    store.close()
    assert lane_connections(admin, store) == []


def test_concurrent_reads_open_at_most_one_connection_each(
    redis_url: str, admin: redis.Redis
) -> None:
    store = make_store(redis_url)
    barrier = threading.Barrier(6)
    versions: list[int] = []

    def reader() -> None:
        barrier.wait()
        versions.extend(store.get_production(ORG, "greeting").version for _ in range(50))

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert versions == [1] * 300
    assert 1 <= len(lane_connections(admin, store)) <= 6
    store.close()


def test_a_connection_the_server_closed_while_idle_is_replaced(
    redis_url: str, admin: redis.Redis
) -> None:
    store = make_store(redis_url)
    store.get_production(ORG, "greeting")
    [before] = lane_connections(admin, store)
    admin.client_kill_filter(_id=before["id"])  # as a restart or an idle timeout would
    store.promote(ORG, "greeting", "2", USER)
    assert store.get_production(ORG, "greeting").version == 2
    [after] = lane_connections(admin, store)
    assert after["id"] != before["id"]
    store.close()


def test_a_forgotten_script_is_loaded_again(redis_url: str, admin: redis.Redis) -> None:
    store = make_store(redis_url)
    store.get_production(ORG, "greeting")
    admin.script_flush()
    assert store.get_production(ORG, "greeting").version == 1
    store.close()


def test_a_timed_out_reply_is_never_read_by_the_next_read(
    redis_url: str, admin: redis.Redis
) -> None:
    # The read times out while the server is paused; its reply arrives later. Were the
    # connection kept, the next read would take that stale reply (version 1) for its own.
    store = make_store(redis_url, socket_timeout="0.2")
    store.get_production(ORG, "greeting")
    admin.execute_command("CLIENT", "PAUSE", "500", "ALL")
    with pytest.raises(StorageUnavailable):
        store.get_production(ORG, "greeting")
    time.sleep(0.5)
    store.promote(ORG, "greeting", "2", USER)
    assert store.get_production(ORG, "greeting").version == 2
    store.close()


def test_redis_down_is_storage_unavailable_and_reads_resume(
    redis_url: str, admin: redis.Redis
) -> None:
    store = make_store(redis_url)
    store.get_production(ORG, "greeting")
    lane = store._read_lane
    assert lane is not None
    # Every connection to the server is refused from here on: a fresh connection can
    # only fail, and the lane must not retry in a loop.
    lane._connection_kwargs = {**lane._connection_kwargs, "port": 1}
    [idle] = lane_connections(admin, store)
    admin.client_kill_filter(_id=idle["id"])
    with pytest.raises(StorageUnavailable, match=r"^storage unavailable$"):
        store.get_production(ORG, "greeting")
    assert lane._idle.connections == []
    lane._connection_kwargs = {
        **lane._connection_kwargs,
        "port": admin.connection_pool.connection_kwargs["port"],
    }
    assert store.get_production(ORG, "greeting").version == 1
    store.close()


def test_a_forked_child_opens_its_own_connection(redis_url: str, admin: redis.Redis) -> None:
    store = make_store(redis_url)
    store.get_production(ORG, "greeting")
    [parents] = lane_connections(admin, store)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read, then say which connection served it
        try:
            version = store.get_production(ORG, "greeting").version
            ids = [
                c["id"]
                for c in lane_connections(
                    redis.Redis.from_url(redis_url, decode_responses=True), store
                )
            ]
            os.write(write, f"{version} {','.join(ids)}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    version, ids = os.read(read, 1000).decode().split(" ")
    os.close(read)
    assert version == "1"
    assert parents["id"] in ids.split(",") and len(ids.split(",")) == 2
    # The parent's connection still answers the parent.
    assert store.get_production(ORG, "greeting").version == 1
    store.close()
