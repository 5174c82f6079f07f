"""storage/memo.py: the bounded memo, and the Redis backend's use of it.

The property that matters: a memo never answers with data that is no longer stored.
The decoding memo is keyed by every stored field, so a change made through another
storage object (another gunicorn worker, another host) is seen by the next read.
"""

from __future__ import annotations

from collections.abc import Iterator

import fakeredis
import pytest

from storage import Storage
from storage.memo import Memo
from storage.redis import RedisStorage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def test_a_memo_forgets_everything_when_it_has_max_entries() -> None:
    memo: Memo[str, int] = Memo(max_entries=3, max_bytes=1000)
    for i, key in enumerate("abc"):
        assert memo.put(key, i, 1) == i
    assert [memo.get(k) for k in "abc"] == [0, 1, 2]
    memo.put("d", 3, 1)
    assert [memo.get(k) for k in "abcd"] == [None, None, None, 3]
    assert len(memo) == 1


def test_a_memo_stays_within_its_bytes() -> None:
    memo: Memo[str, str] = Memo(max_entries=100, max_bytes=10)
    memo.put("a", "x" * 6, 6)
    memo.put("b", "y" * 4, 4)
    assert memo.get("a") and memo.get("b")
    memo.put("c", "z", 1)  # 11 bytes would be over: the others go
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (None, None, "z")
    # A value larger than the whole bound is returned but not kept.
    assert memo.put("big", "w" * 11, 11) == "w" * 11
    assert memo.get("big") is None and memo.get("c") == "z"


@pytest.fixture(params=["fakeredis", pytest.param("redis", marks=pytest.mark.redis)])
def two_workers(request: pytest.FixtureRequest) -> Iterator[tuple[RedisStorage, RedisStorage]]:
    """Two storage objects on one Redis, as two gunicorn workers have."""
    if request.param == "fakeredis":
        server = fakeredis.FakeServer()
        stores = tuple(
            RedisStorage(fakeredis.FakeRedis(server=server, decode_responses=True))
            for _ in range(2)
        )
    else:
        url = request.getfixturevalue("redis_url")
        stores = (RedisStorage.from_url(url), RedisStorage.from_url(url))
    yield stores  # type: ignore[misc]
    for store in stores:
        store.close()


def setup_two_versions(store: Storage) -> None:
    store.create_prompt(ORG, "greeting")
    store.create_version(ORG, "greeting", "one", USER)
    store.create_version(ORG, "greeting", "two", USER)
    store.promote(ORG, "greeting", "1", USER)


def test_the_same_stored_version_decodes_to_the_same_object(
    two_workers: tuple[RedisStorage, RedisStorage],
) -> None:
    reader, _ = two_workers
    setup_two_versions(reader)
    first = reader.get_production(ORG, "greeting")
    assert reader.get_production(ORG, "greeting") is first
    assert reader.get_version(ORG, "greeting", "1") is first
    assert reader.get_latest(ORG, "greeting") is not first


def test_a_change_by_another_worker_is_read_at_once(
    two_workers: tuple[RedisStorage, RedisStorage],
) -> None:
    reader, writer = two_workers
    setup_two_versions(writer)
    assert reader.get_production(ORG, "greeting").version == 1
    latest = reader.get_latest(ORG, "greeting")
    assert latest.content == "two"

    writer.edit_version(ORG, "greeting", "2", "two, edited")
    assert reader.get_latest(ORG, "greeting").content == "two, edited"

    writer.promote(ORG, "greeting", "2", USER)
    production = reader.get_production(ORG, "greeting")
    assert (production.version, production.status) == (2, "published")
    assert reader.get_version(ORG, "greeting", "1").status == "archived"

    writer.unarchive_version(ORG, "greeting", "1")
    assert reader.get_version(ORG, "greeting", "1").status == "draft"
