"""The promotion check racing the changes it reads, on every backend: the check and the
promotion are one step, so a promotion's ``breaking`` (or its refusal) always describes
the version it actually replaced, as that version and the candidate were at that step.

Threads released together; on Redis the release engine decides in Python on a state
loaded before, and the change is applied only while the prompt's revision is what was
loaded, so a version edited or an environment moved in between makes it load and
decide again (storage/redis/lua/apply_change.lua).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from storage import BreakingPromotion, LifecycleError, Storage
from storage.redis import BaseRedisStorage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
ROUNDS = 12
T = TypeVar("T")

BASE: dict[str, Any] = {"x": {"type": "string"}}
WITH_Y: dict[str, Any] = {"x": {"type": "string"}, "y": {"type": "integer"}}
BREAKING: dict[str, Any] = {"x": {"type": "integer"}}


def together(*work: Callable[[], T]) -> list[T | Exception]:
    barrier = threading.Barrier(len(work))

    def run(job: Callable[[], T]) -> T | Exception:
        barrier.wait()
        try:
            return job()
        except Exception as exc:  # collected: the test decides what is allowed
            return exc

    with ThreadPoolExecutor(len(work)) as pool:
        return list(pool.map(run, work))


def new(storage: Storage, name: str, schema: dict[str, Any], content: str = "{{x}}") -> str:
    variables = list(schema)
    return storage.create_version(
        ORG, name, content, USER, variables=variables, variables_schema=schema
    ).version_id


def promotion_against_edit(storage: Storage, name: str) -> None:
    storage.create_prompt(ORG, name)
    new(storage, name, BASE)
    storage.promote(ORG, name, "1", USER)
    candidate = new(storage, name, BASE)
    promote, edit = together(
        lambda: storage.promote(ORG, name, candidate, USER),
        lambda: storage.edit_version(
            ORG, name, candidate, "{{x}}", variables=["x"], variables_schema=BREAKING
        ),
    )
    production = storage.get_production(ORG, name)
    if isinstance(promote, Exception):
        # The edit came first: the check saw the breaking schema.
        assert isinstance(promote, BreakingPromotion), promote
        assert not isinstance(edit, Exception), edit
        assert production.version == 1
        assert storage.get_version(ORG, name, candidate).variables_schema == BREAKING
    else:
        # The promotion came first: it checked (and published) the compatible schema,
        # and the edit of a published version was refused.
        assert isinstance(edit, LifecycleError), edit
        assert promote.record.breaking is False
        assert production.version == 2 and production.variables_schema == BASE


def test_promotion_racing_an_edit_of_the_candidate(storage: Storage) -> None:
    for round_ in range(ROUNDS):
        promotion_against_edit(storage, f"p{round_}")


def two_promotions(storage: Storage, name: str) -> None:
    storage.create_prompt(ORG, name)
    new(storage, name, BASE)
    storage.promote(ORG, name, "1", USER)
    # v2 and v3 both add a required y: each breaks v1, neither breaks the other.
    v2, v3 = new(storage, name, WITH_Y, "{{x}}{{y}}"), new(storage, name, WITH_Y, "{{x}}{{y}}")
    acknowledged, plain = together(
        lambda: storage.promote(ORG, name, v2, USER, notes="y", allow_breaking=True),
        lambda: storage.promote(ORG, name, v3, USER),
    )
    assert not isinstance(acknowledged, Exception), acknowledged
    history = list(reversed(storage.list_history(ORG, name).items))
    records = {r.version_number: (r.previous_version, r.breaking) for r in history}
    if isinstance(plain, Exception):
        # v3 met v1: breaking and refused; v2 then replaced v1, acknowledged.
        assert isinstance(plain, BreakingPromotion), plain
        assert records == {1: (None, False), 2: (1, True)}
    else:
        # v3 could only replace v2 (replacing v1 breaks it, unacknowledged).
        assert records == {1: (None, False), 2: (1, True), 3: (2, False)}


def test_promotions_racing_check_against_what_they_replace(storage: Storage) -> None:
    for round_ in range(ROUNDS):
        two_promotions(storage, f"p{round_}")


def test_redis_apply_notices_an_edit_after_the_load(
    redis_storage: BaseRedisStorage[Any],
) -> None:
    """Deterministically: the candidate is edited to break callers after the state the
    first decision read was loaded; that decision must not be applied."""
    store = redis_storage
    store.create_prompt(ORG, "p")
    new(store, "p", BASE)
    store.promote(ORG, "p", "1", USER)
    candidate = new(store, "p", BASE)
    revisions: list[int] = []
    original = store._load

    def edit_after_first_load(*args: Any, **kwargs: Any) -> Any:
        loaded = original(*args, **kwargs)
        revisions.append(loaded.state.revision)
        if len(revisions) == 1:
            store.edit_version(
                ORG, "p", candidate, "{{x}}", variables=["x"], variables_schema=BREAKING
            )
        return loaded

    store._load = edit_after_first_load  # type: ignore[method-assign]
    try:
        with pytest.raises(BreakingPromotion):
            store.promote(ORG, "p", candidate, USER)
    finally:
        del store._load
    # The promotion's load, the edit's, the promotion's again: each after a change.
    assert len(revisions) == 3 and revisions[0] < revisions[2]
    assert store.get_production(ORG, "p").version == 1
    assert len(store.list_history(ORG, "p").items) == 1


def test_redis_apply_notices_the_environment_moved(
    redis_storage: BaseRedisStorage[Any],
) -> None:
    """Production moves after the load: the decision is made again on the new state."""
    store = redis_storage
    store.create_prompt(ORG, "p")
    new(store, "p", BASE)
    store.promote(ORG, "p", "1", USER)
    candidate = new(store, "p", WITH_Y, "{{x}}{{y}}")
    other = new(store, "p", WITH_Y, "{{x}}{{y}}")
    loads: list[int | None] = []
    original = store._load

    def promote_other_after_first_load(*args: Any, **kwargs: Any) -> Any:
        loaded = original(*args, **kwargs)
        loads.append(loaded.state.placements.get("production"))
        if len(loads) == 1:
            store.promote(ORG, "p", other, USER, notes="y", allow_breaking=True)
        return loaded

    store._load = promote_other_after_first_load  # type: ignore[method-assign]
    try:
        # Breaking against v1 (acknowledged), not against v3, which it replaces.
        done = store.promote(ORG, "p", candidate, USER, notes="y", allow_breaking=True)
    finally:
        del store._load
    assert loads == [1, 1, 3]  # the first load, the other promotion's, the second
    assert (done.record.previous_version, done.record.breaking) == (3, False)
