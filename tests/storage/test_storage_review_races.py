"""Reviews racing: concurrent approvals of one review apply it once, and a rollback
racing the last approval leaves exactly one outcome, recorded. Threads on every backend,
processes on real Redis here and on SQLite and PostgreSQL in
tests/sql/test_sql_review_races.py."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from storage import (
    AlreadyApproved,
    ProductionChanged,
    ReviewClosed,
    ReviewStale,
    Storage,
    storage_from_url,
)
from storage.redis import RedisStorage

ORG = "acme"
AUTHOR = "a0000000-0000-4000-8000-000000000001"
REQUESTER = "a0000000-0000-4000-8000-000000000002"
APPROVERS = [f"b0000000-0000-4000-8000-{i:012d}" for i in range(8)]


def setup(storage: Storage, required: int) -> str:
    """Production holds version 1 (version 2 before it); a review of draft 3 needing
    ``required`` approvals; the review's id."""
    storage.create_prompt(ORG, "greeting")
    for i in range(3):
        storage.create_version(ORG, "greeting", f"c{i}", AUTHOR)
    storage.promote(ORG, "greeting", "2", AUTHOR)
    storage.promote(ORG, "greeting", "1", AUTHOR)
    storage.update_environment(ORG, "production", required_approvals=required)
    return storage.request_review(ORG, "greeting", "3", "production", REQUESTER).review_id


def approve(storage: Storage, review_id: str, user: str) -> str:
    """One approval: "applied", "approved", or the refusal's name."""
    try:
        _, promotion = storage.approve_review(ORG, review_id, user, user[-4:])
    except (ReviewClosed, AlreadyApproved, ReviewStale) as exc:
        return type(exc).__name__
    return "applied" if promotion is not None else "approved"


def roll_back(storage: Storage) -> str:
    try:
        storage.rollback(ORG, "greeting", REQUESTER, expected_production=1)
    except ProductionChanged:
        return "refused"
    return "rolled back"


def run(kind: str, storage: Storage, review_id: str, i: int) -> str:
    return roll_back(storage) if kind == "rollback" else approve(storage, review_id, APPROVERS[i])


def check_applied_once(
    storage: Storage, review_id: str, outcomes: list[str], required: int
) -> None:
    assert outcomes.count("applied") == 1
    assert outcomes.count("approved") == required - 1
    assert outcomes.count("ReviewClosed") == len(outcomes) - required
    review = storage.get_review(ORG, review_id)
    assert review.status == "applied" and len(review.approvals) == required
    records = [r for r in storage.list_history(ORG, "greeting").items if r.review_id]
    assert len(records) == 1 and set(records[0].approved_by) == {
        a.user_id for a in review.approvals
    }
    events = storage.events_after(ORG, "0-0", 1000)
    assert [e.type for e in events].count("review.applied") == 1
    assert [e.type for e in events].count("review.approved") == required
    assert storage.get_production(ORG, "greeting").version == 3


def check_one_outcome(storage: Storage, review_id: str, outcomes: dict[str, str]) -> None:
    """Either the review applied and the rollback was refused, or the rollback happened
    and the review went stale; history and the review say the same."""
    review = storage.get_review(ORG, review_id)
    production = storage.get_production(ORG, "greeting").version
    history = storage.list_history(ORG, "greeting").items
    if outcomes["approve"] == "applied":
        assert outcomes["rollback"] == "refused"
        assert review.status == "applied" and production == 3
        assert history[0].review_id == review_id and len(history) == 3
    else:
        assert outcomes == {"approve": "ReviewStale", "rollback": "rolled back"}
        assert review.status == "stale" and production == 2
        assert history[0].review_id is None and len(history) == 3


def at_once(count: int, work: Any) -> list[str]:
    barrier = threading.Barrier(count)

    def go(i: int) -> str:
        barrier.wait()
        return str(work(i))

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(go, range(count)))


# --------------------------------------------------------------------------- threads


@pytest.mark.parametrize("required", [1, 3])
def test_8_threads_approving_apply_it_once(storage: Storage, required: int) -> None:
    review_id = setup(storage, required)
    outcomes = at_once(8, lambda i: approve(storage, review_id, APPROVERS[i]))
    check_applied_once(storage, review_id, outcomes, required)


def test_one_person_approving_twice_at_once_counts_once(storage: Storage) -> None:
    review_id = setup(storage, 2)
    outcomes = at_once(8, lambda i: approve(storage, review_id, APPROVERS[0]))
    assert sorted(outcomes) == ["AlreadyApproved"] * 7 + ["approved"]
    assert len(storage.get_review(ORG, review_id).approvals) == 1


@pytest.mark.parametrize("attempt", range(3))
def test_rollback_racing_the_last_approval(storage: Storage, attempt: int) -> None:
    review_id = setup(storage, 1)
    outcomes = at_once(2, lambda i: run(["approve", "rollback"][i], storage, review_id, i))
    check_one_outcome(storage, review_id, {"approve": outcomes[0], "rollback": outcomes[1]})


# --------------------------------------------------------------------------- processes


def _in_process(url: str, kind: str, review_id: str, i: int, start: Any) -> str:
    store = storage_from_url(url)
    start.wait()
    try:
        return run(kind, store, review_id, i)
    finally:
        store.close()


def in_processes(url: str, jobs: list[tuple[str, int]], review_id: str) -> list[str]:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(len(jobs)) as pool:
            pending = [
                pool.apply_async(_in_process, (url, kind, review_id, i, start)) for kind, i in jobs
            ]
            start.set()
            return [p.get(timeout=120) for p in pending]


@pytest.mark.redis
def test_4_processes_approving_apply_it_once(redis_url: str) -> None:
    store = RedisStorage.from_url(redis_url)
    review_id = setup(store, 2)
    outcomes = in_processes(redis_url, [("approve", i) for i in range(4)], review_id)
    check_applied_once(store, review_id, outcomes, 2)
    store.close()


@pytest.mark.redis
def test_processes_rollback_racing_the_last_approval(redis_url: str) -> None:
    store = RedisStorage.from_url(redis_url)
    review_id = setup(store, 1)
    outcomes = in_processes(redis_url, [("approve", 0), ("rollback", 1)], review_id)
    check_one_outcome(store, review_id, {"approve": outcomes[0], "rollback": outcomes[1]})
    store.close()
