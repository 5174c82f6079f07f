"""Guarded promotions and rollbacks racing on one prompt: 16 threads on every backend,
4 processes on real Redis.

What must hold whatever the interleaving: a change succeeds exactly when production was
the version it expected at its atomic step (its record's previous_version is that
expectation; a refusal reports a different current version), the history holds one
record per success and chains (each record replaced the version the one before it
made production), and exactly one version is published at the end.
"""

from __future__ import annotations

import itertools
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from storage import ProductionChanged, Promotion, Storage, lifecycle
from storage.redis import RedisStorage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


@dataclass(frozen=True)
class Outcome:
    """One attempt: what it expected, and its record or the production it met instead."""

    kind: str  # "promote" | "rollback"
    expected: int | None
    history_id: str | None = None  # set on success
    version: int | None = None  # the version it made production
    previous: int | None = None  # the record's previous_version
    current: int | None = None  # on refusal: production at that moment


def attempt(storage: Storage, kind: str, expected: int | None, draft: str | None = None) -> Outcome:
    """One guarded promotion of ``draft`` (or rollback), refusal included."""
    try:
        if kind == "promote":
            assert draft is not None
            done: Promotion = storage.promote(
                ORG, "greeting", draft, USER, expected_production=expected
            )
        else:
            done = storage.rollback(ORG, "greeting", USER, expected_production=expected)
    except ProductionChanged as exc:
        return Outcome(kind, expected, current=exc.current)
    record = done.record
    return Outcome(
        kind, expected, record.history_id, record.version_number, record.previous_version
    )


def until_done(
    storage: Storage, kind: str, times: int, expected: int | None, draft: str | None = None
) -> list[Outcome]:
    """Retry with the production a refusal reported until ``times`` changes succeeded."""
    outcomes: list[Outcome] = []
    while sum(o.history_id is not None for o in outcomes) < times:
        outcome = attempt(storage, kind, expected, draft)
        outcomes.append(outcome)
        expected = outcome.current if outcome.history_id is None else outcome.version
    return outcomes


def all_at_once(count: int, work: Callable[[int], list[Outcome]]) -> list[Outcome]:
    """Run work(0..count-1) on ``count`` threads released together by a barrier."""
    barrier = threading.Barrier(count)

    def run(i: int) -> list[Outcome]:
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(count) as pool:
        return [o for outcomes in pool.map(run, range(count)) for o in outcomes]


def setup(storage: Storage, drafts: int, promoted: int) -> list[str]:
    """Versions 1..promoted promoted in order, then ``drafts`` drafts; their ids."""
    storage.create_prompt(ORG, "greeting")
    for n in range(1, promoted + 1):
        storage.create_version(ORG, "greeting", f"p{n}", USER)
        storage.promote(ORG, "greeting", str(n), USER)
    return [
        storage.create_version(ORG, "greeting", f"d{i}", USER).version_id for i in range(drafts)
    ]


def check(storage: Storage, outcomes: list[Outcome], promoted_before: int) -> list[Outcome]:
    """Assert the rules of the module docstring; return the successes in history order."""
    wins = {o.history_id: o for o in outcomes if o.history_id is not None}
    for o in outcomes:
        if o.history_id is None:
            assert o.current != o.expected, o  # refused only when the guard did not hold
        else:
            assert o.previous == o.expected, o  # succeeded only when it held
    records = list(reversed(storage.list_history(ORG, "greeting", limit=200).items))
    assert len(records) == promoted_before + len(wins)
    assert {r.history_id for r in records[promoted_before:]} == set(wins)
    for before, after in itertools.pairwise(records):
        assert after.previous_version == before.version_number
    for i, record in enumerate(records[promoted_before:], start=promoted_before):
        win = wins[record.history_id]
        assert (win.version, win.previous) == (record.version_number, record.previous_version)
        if win.kind == "rollback":  # back along the line of production versions
            assert record.version_number == lifecycle.previous_production(records[:i])
    published = storage.list_versions(ORG, "greeting", status="published", limit=200).items
    assert [v.version for v in published] == [records[-1].version_number]
    assert storage.get_prompt(ORG, "greeting").production_version == records[-1].version_number
    return [wins[r.history_id] for r in records[promoted_before:]]


# --------------------------------------------------------------------------- threads


@pytest.mark.parametrize("promoted", [0, 1])
def test_16_threads_with_one_expectation_one_wins(storage: Storage, promoted: int) -> None:
    drafts = setup(storage, 16, promoted)
    expected = promoted or None  # version 1, or "no production version"

    outcomes = all_at_once(16, lambda i: [attempt(storage, "promote", expected, drafts[i])])

    wins = check(storage, outcomes, promoted)
    assert len(wins) == 1
    winner = wins[0].version
    assert [o.current for o in outcomes if o.history_id is None] == [winner] * 15


def test_16_threads_retrying_guarded_promotions(storage: Storage) -> None:
    drafts = setup(storage, 16, 1)

    outcomes = all_at_once(16, lambda i: until_done(storage, "promote", 1, 1, drafts[i]))

    wins = check(storage, outcomes, 1)
    assert sorted(w.version or 0 for w in wins) == list(range(2, 18))
    assert len(outcomes) > 16  # they all started expecting version 1: most had to retry


def test_16_threads_promoting_and_rolling_back(storage: Storage) -> None:
    # Each rollback walks one version back: 26 promoted before leave a target to every
    # one of the 24, whatever the order.
    drafts = setup(storage, 8, 26)

    def work(i: int) -> list[Outcome]:
        if i % 2:
            return until_done(storage, "rollback", 3, 26)
        return until_done(storage, "promote", 1, 26, drafts[i // 2])

    outcomes = all_at_once(16, work)

    wins = check(storage, outcomes, 26)
    assert sum(w.kind == "rollback" for w in wins) == 8 * 3
    promoted = sorted(w.version or 0 for w in wins if w.kind == "promote")
    assert promoted == list(range(27, 35))


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Job:
    """One process's work: promote its drafts in turn, or roll back ``rollbacks`` times."""

    kind: str
    expected: int | None  # its first expectation
    drafts: tuple[str, ...] = ()
    rollbacks: int = 0
    retry: bool = True  # False: one attempt per draft, refused or not


def _race_in_process(url: str, job: Job, start: object) -> list[Outcome]:
    store = RedisStorage.from_url(url)
    start.wait()  # type: ignore[attr-defined]
    try:
        if job.kind == "rollback":
            return until_done(store, "rollback", job.rollbacks, job.expected)
        outcomes: list[Outcome] = []
        expected = job.expected
        for draft in job.drafts:
            if job.retry:
                outcomes += until_done(store, "promote", 1, expected, draft)
                expected = outcomes[-1].version
            else:
                outcomes.append(attempt(store, "promote", expected, draft))
        return outcomes
    finally:
        store.close()


def in_4_processes(url: str, jobs: list[Job]) -> list[Outcome]:
    """Run the jobs in 4 processes of their own, released together."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(4) as pool:
            pending = [pool.apply_async(_race_in_process, (url, job, start)) for job in jobs]
            start.set()
            return [o for p in pending for o in p.get(timeout=120)]


@pytest.mark.redis
def test_4_processes_with_one_expectation_one_wins(redis_url: str) -> None:
    store = RedisStorage.from_url(redis_url)
    drafts = setup(store, 4, 1)

    outcomes = in_4_processes(redis_url, [Job("promote", 1, (d,), retry=False) for d in drafts])

    assert len(outcomes) == 4
    wins = check(store, outcomes, 1)
    assert len(wins) == 1
    assert [o.current for o in outcomes if o.history_id is None] == [wins[0].version] * 3
    store.close()


@pytest.mark.redis
def test_4_processes_promoting_and_rolling_back(redis_url: str) -> None:
    store = RedisStorage.from_url(redis_url)
    drafts = setup(store, 16, 22)  # a target for each of the 20 rollbacks, in any order

    jobs = [
        Job("promote", 22, tuple(drafts[:8])),
        Job("promote", 22, tuple(drafts[8:])),
        Job("rollback", 22, rollbacks=10),
        Job("rollback", 22, rollbacks=10),
    ]
    outcomes = in_4_processes(redis_url, jobs)

    wins = check(store, outcomes, 22)
    assert sum(w.kind == "rollback" for w in wins) == 20
    promoted = sorted(w.version or 0 for w in wins if w.kind == "promote")
    assert promoted == list(range(23, 39))
    store.close()
