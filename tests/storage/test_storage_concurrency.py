"""Concurrent promotions and version creation keep the rules (docs/api.md section 5)."""

from __future__ import annotations

import itertools
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest

from storage import LifecycleError, SigningKey, Storage
from storage.redis import RedisStorage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
T = TypeVar("T")


def all_at_once(count: int, work: Callable[[int], T]) -> list[T | Exception]:
    """Run work(0..count-1) on ``count`` threads released together by a barrier."""
    barrier = threading.Barrier(count)

    def run(i: int) -> T | Exception:
        barrier.wait()
        try:
            return work(i)
        except Exception as exc:  # collected: the test decides what is allowed
            return exc

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_16_threads_promoting_leave_one_published(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    ids = [storage.create_version(ORG, "greeting", f"c{i}", USER).version_id for i in range(16)]

    results = all_at_once(16, lambda i: storage.promote(ORG, "greeting", ids[i], USER))

    succeeded = [r for r in results if not isinstance(r, Exception)]
    failures = [r for r in results if isinstance(r, Exception)]
    assert all(isinstance(f, LifecycleError) for f in failures), failures
    assert succeeded  # at least one wins
    published = storage.list_versions(ORG, "greeting", status="published").items
    assert len(published) == 1
    history = list(reversed(storage.list_history(ORG, "greeting", limit=200).items))
    assert len(history) == len(succeeded)
    assert {r.history_id for r in history} == {p.record.history_id for p in succeeded}
    # The records chain: each promotion replaced exactly the one before it.
    assert history[0].previous_version is None
    for before, after in itertools.pairwise(history):
        assert after.previous_version == before.version_number
    assert published[0].version == history[-1].version_number
    archived = storage.list_versions(ORG, "greeting", status="archived", limit=200).items
    assert len(archived) == len(succeeded) - 1


def test_threads_creating_versions_get_distinct_numbers(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")

    def create(i: int) -> list[int]:
        return [
            storage.create_version(ORG, "greeting", f"{i}-{j}", USER).version for j in range(10)
        ]

    results = all_at_once(8, create)
    numbers = sorted(n for r in results if not isinstance(r, Exception) for n in r)
    assert numbers == list(range(1, 81))
    assert storage.get_latest(ORG, "greeting").version == 80


def test_racing_signing_key_candidates_agree(storage: Storage) -> None:
    def offer(i: int) -> SigningKey:
        return storage.ensure_signing_key(SigningKey(f"k{i}", f"pem{i}", storage.clock()))

    winners = all_at_once(8, offer)
    assert len({w.kid for w in winners if isinstance(w, SigningKey)}) == 1
    assert storage.signing_keys() == [winners[0]]


def test_racing_session_secret_candidates_agree(storage: Storage) -> None:
    winners = all_at_once(8, lambda i: storage.ensure_session_secret(f"secret-{i}"))
    assert len(set(winners)) == 1
    assert isinstance(winners[0], str)
    assert storage.ensure_session_secret("late") == winners[0]


def _create_versions(url: str, count: int, start: multiprocessing.synchronize.Event) -> list[int]:
    store = RedisStorage.from_url(url)
    start.wait()
    try:
        return [store.create_version(ORG, "greeting", "x", USER).version for _ in range(count)]
    finally:
        store.close()


@pytest.mark.redis
@pytest.mark.slow
def test_4_processes_creating_200_versions_on_real_redis(redis_url: str) -> None:
    store = RedisStorage.from_url(redis_url)
    store.create_prompt(ORG, "greeting")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(4) as pool:
            pending = [pool.apply_async(_create_versions, (redis_url, 50, start)) for _ in range(4)]
            start.set()
            per_process = [p.get(timeout=120) for p in pending]
    numbers = sorted(n for numbers in per_process for n in numbers)
    assert numbers == list(range(1, 201))
    assert all(len(n) == 50 for n in per_process)
    listed = store.list_versions(ORG, "greeting", limit=200)
    assert [v.version for v in listed.items] == list(range(200, 0, -1))
    store.close()
