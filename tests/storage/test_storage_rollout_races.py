"""Rollout changes racing on one prompt, on threads, on every backend: a completion
against aborts, steps, other completions and promotions; starts against starts.

What must hold whatever the interleaving: exactly one outcome for the rollout (one
completion or one abort, each with its one event and, for a completion, its one history
record), every other change either took effect before it or was refused with the error
that says the rollout is gone (RolloutNotFound) or running (RolloutInProgress), and the
event log tells the same story in the same order.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from storage import (
    Promotion,
    PromptVersion,
    RolloutInProgress,
    RolloutNotFound,
    Storage,
)

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
ROUNDS = 3


def at_once(work: list[Callable[[], Any]]) -> list[Any]:
    """Run every callable on its own thread, released together; each result is what it
    returned or the exception it raised."""
    barrier = threading.Barrier(len(work))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait()
        try:
            return call()
        except Exception as exc:  # the outcome under test
            return exc

    with ThreadPoolExecutor(len(work)) as pool:
        return list(pool.map(run, work))


def fresh(storage: Storage, name: str, drafts: int = 3) -> None:
    """Prompt ``name``: version 1 in production, drafts 2..drafts+1."""
    storage.create_prompt(ORG, name)
    for i in range(drafts + 1):
        storage.create_version(ORG, name, f"c{i}", USER)
    storage.promote(ORG, name, "1", USER)


def rollout_events(storage: Storage, name: str) -> list[tuple[str, str | None, int | None]]:
    return [
        (e.type, e.rollout_id, e.percent)
        for e in storage.events_after(ORG, "0-0", 100_000)
        if e.prompt_name == name and (e.type.startswith("rollout.") or e.rollout_id)
    ]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_complete_racing_aborts_has_one_winner(storage: Storage, round_: int) -> None:
    name = f"p{round_}"
    fresh(storage, name)
    rollout = storage.start_rollout(ORG, name, "2", "production", 10, USER)
    results = at_once(
        [lambda: storage.complete_rollout(ORG, name, "production", USER)] * 3
        + [lambda: storage.abort_rollout(ORG, name, "production")] * 3
    )
    winners = [r for r in results if not isinstance(r, Exception)]
    assert len(winners) == 1, results
    assert all(isinstance(r, RolloutNotFound) for r in results if r not in winners)
    history = storage.list_history(ORG, name).items
    events = rollout_events(storage, name)
    if isinstance(winners[0], Promotion):
        assert storage.get_production(ORG, name).version == 2
        assert [r.rollout_id for r in history] == [rollout.rollout_id, None]
        assert [kind for kind, *_ in events] == [
            "rollout.started",
            "version.promoted",
            "rollout.completed",
        ]
    else:
        assert storage.get_production(ORG, name).version == 1
        assert [r.rollout_id for r in history] == [None]
        assert [kind for kind, *_ in events] == ["rollout.started", "rollout.aborted"]
    assert storage.list_rollouts(ORG, name) == []
    assert isinstance(storage.read_environment(ORG, name, "production"), PromptVersion)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_complete_racing_steps(storage: Storage, round_: int) -> None:
    name = f"p{round_}"
    fresh(storage, name)
    storage.start_rollout(ORG, name, "2", "production", 5, USER)
    percents = [20, 40, 60, 80]
    steps = [
        (lambda p=p: storage.set_rollout_percent(ORG, name, "production", p)) for p in percents
    ]
    results = at_once([lambda: storage.complete_rollout(ORG, name, "production", USER), *steps])
    assert isinstance(results[0], Promotion), results[0]
    stepped = [r for r in results[1:] if not isinstance(r, Exception)]
    assert all(isinstance(r, RolloutNotFound) for r in results[1:] if r not in stepped)
    events = rollout_events(storage, name)
    kinds = [kind for kind, *_ in events]
    # Every step that succeeded came before the completion, in the log as well.
    assert kinds == [
        "rollout.started",
        *["rollout.updated"] * len(stepped),
        "version.promoted",
        "rollout.completed",
    ]
    last_step = [percent for kind, _, percent in events if kind == "rollout.updated"]
    assert sorted(last_step) == sorted(r.percent for r in stepped)
    completed_percent = events[-1][2]
    assert completed_percent == (last_step[-1] if last_step else 5)
    assert storage.get_production(ORG, name).version == 2


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_completions_at_once_complete_once(storage: Storage, round_: int) -> None:
    name = f"p{round_}"
    fresh(storage, name)
    rollout = storage.start_rollout(ORG, name, "2", "production", 50, USER)
    results = at_once([lambda: storage.complete_rollout(ORG, name, "production", USER)] * 6)
    done = [r for r in results if isinstance(r, Promotion)]
    assert len(done) == 1
    assert all(isinstance(r, RolloutNotFound) for r in results if r not in done)
    records = [r for r in storage.list_history(ORG, name).items if r.rollout_id]
    assert [r.rollout_id for r in records] == [rollout.rollout_id]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_complete_racing_promotions(storage: Storage, round_: int) -> None:
    """A promotion into the environment is refused while the rollout runs, and replaces
    the candidate when it comes after the completion."""
    name = f"p{round_}"
    fresh(storage, name)
    storage.start_rollout(ORG, name, "2", "production", 50, USER)
    results = at_once(
        [
            lambda: storage.complete_rollout(ORG, name, "production", USER),
            lambda: storage.promote(ORG, name, "3", USER),
            lambda: storage.promote(ORG, name, "4", USER),
        ]
    )
    assert isinstance(results[0], Promotion), results[0]
    promoted = [r for r in results[1:] if isinstance(r, Promotion)]
    refused = [r for r in results[1:] if not isinstance(r, Promotion)]
    assert all(isinstance(r, RolloutInProgress) for r in refused), refused
    # History chains: completion from 1 to 2, then each later promotion from the one before.
    history = list(reversed(storage.list_history(ORG, name).items))
    assert [(r.version_number, r.previous_version) for r in history[:2]] == [(1, None), (2, 1)]
    chain = history[1:]
    assert all(b.previous_version == a.version_number for a, b in itertools.pairwise(chain))
    assert len(history) == 2 + len(promoted)
    published = storage.list_versions(ORG, name, status="published").items
    assert [v.version for v in published] == [history[-1].version_number]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_starts_at_once_start_one(storage: Storage, round_: int) -> None:
    name = f"p{round_}"
    fresh(storage, name, drafts=5)
    results = at_once(
        [
            (lambda n=n: storage.start_rollout(ORG, name, str(n), "production", 10, USER))
            for n in range(2, 7)
        ]
    )
    started = [r for r in results if not isinstance(r, Exception)]
    assert len(started) == 1
    refused = [r for r in results if isinstance(r, Exception)]
    assert all(isinstance(r, RolloutInProgress) for r in refused), refused
    assert {r.rollout_id for r in refused} == {started[0].rollout_id}
    assert storage.list_rollouts(ORG, name) == started
    assert [kind for kind, *_ in rollout_events(storage, name)] == ["rollout.started"]
