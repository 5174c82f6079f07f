"""The event log: one event per change, in the change's atomic step, in order, bounded.

Every test runs on every backend (memory, real Redis, the local cluster, SQLite, PostgreSQL).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from storage import (
    EVENT_TYPES,
    Event,
    InvalidInput,
    LifecycleError,
    NotFound,
    ProductionChanged,
    PromptExists,
    Storage,
    StorageError,
    event_position,
)
from tests.storage.test_storage_concurrency import all_at_once

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
OTHER = "7d8f6a0e-3f43-4c1b-8a4e-2b51e0c4d7aa"
START = "0-0"  # below every event id


def log(storage: Storage, org: str = ORG) -> list[Event]:
    return storage.events_after(org, START, 100_000)


def newest(storage: Storage, org: str = ORG) -> str:
    return storage.event_log_bounds(org).newest or START


def only_new(storage: Storage, before: str) -> Event:
    """The one event written since ``before``; fails when there is not exactly one."""
    events = storage.events_after(ORG, before, 100)
    assert len(events) == 1, events
    return events[0]


@pytest.fixture
def prompt_id(storage: Storage) -> str:
    """greeting with versions 1 (production), 2 (draft) and 3 (archived)."""
    prompt = storage.create_prompt(ORG, "greeting")
    for i in range(3):
        storage.create_version(ORG, "greeting", f"Hello {{{{ name }}}} {i}", USER)
    storage.promote(ORG, "greeting", "1", USER)
    storage.archive_version(ORG, "greeting", "3")
    return prompt.prompt_id


def test_an_empty_log(storage: Storage) -> None:
    bounds = storage.event_log_bounds(ORG)
    assert bounds.oldest is None and bounds.newest is None and not bounds.trimmed
    assert storage.events_after(ORG, START, 10) == []
    assert storage.wait_for_events(ORG, START, 0, 10) == []


def test_create_prompt_writes_one_event(storage: Storage, clock) -> None:
    now = clock.advance(3)
    prompt = storage.create_prompt(ORG, "greeting", actor=USER, request_id="req-1")
    [event] = log(storage)
    assert event.type == "prompt.created"
    assert (event.prompt_id, event.prompt_name) == (prompt.prompt_id, "greeting")
    assert (event.version, event.version_id, event.status, event.previous_version) == (
        None,
        None,
        None,
        None,
    )
    assert (event.actor, event.request_id, event.at) == (USER, "req-1", now)
    assert storage.event_log_bounds(ORG).oldest == storage.event_log_bounds(ORG).newest == event.id


def test_without_actor_and_request_id_they_are_null(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    [event] = log(storage)
    assert event.actor is None and event.request_id is None


def test_create_version_writes_one_event(storage: Storage, prompt_id: str, clock) -> None:
    before, now = newest(storage), clock.advance(1)
    version = storage.create_version(ORG, "greeting", "Hi", OTHER, request_id="req-2")
    event = only_new(storage, before)
    assert event.type == "version.created"
    assert (event.prompt_id, event.prompt_name) == (prompt_id, "greeting")
    assert (event.version, event.version_id, event.status) == (4, version.version_id, "draft")
    assert event.previous_version is None
    assert (event.actor, event.request_id, event.at) == (OTHER, "req-2", now)


@pytest.mark.parametrize(
    ("kind", "change", "version", "status"),
    [
        (
            "version.updated",
            lambda s: s.edit_version(ORG, "greeting", "2", "new", actor=OTHER, request_id="r"),
            2,
            "draft",
        ),
        (
            "version.archived",
            lambda s: s.archive_version(ORG, "greeting", "2", actor=OTHER, request_id="r"),
            2,
            "archived",
        ),
        (
            "version.unarchived",
            lambda s: s.unarchive_version(ORG, "greeting", "3", actor=OTHER, request_id="r"),
            3,
            "draft",
        ),
        (
            "version.deleted",
            lambda s: s.delete_version(ORG, "greeting", "3", actor=OTHER, request_id="r"),
            3,
            None,
        ),
    ],
)
def test_version_change_writes_one_event(
    storage: Storage,
    prompt_id: str,
    clock,
    kind: str,
    change: Callable[[Storage], object],
    version: int,
    status: str | None,
) -> None:
    version_id = storage.get_version(ORG, "greeting", str(version)).version_id
    before, now = newest(storage), clock.advance(1)
    change(storage)
    event = only_new(storage, before)
    assert event.type == kind
    assert (event.prompt_id, event.prompt_name) == (prompt_id, "greeting")
    assert (event.version, event.version_id, event.status) == (version, version_id, status)
    assert event.previous_version is None
    assert (event.actor, event.request_id, event.at) == (OTHER, "r", now)


def test_promotion_writes_one_event_with_the_previous_version(
    storage: Storage, prompt_id: str, clock
) -> None:
    before, now = newest(storage), clock.advance(1)
    promotion = storage.promote(ORG, "pmt_" + prompt_id[4:], "2", OTHER, request_id="r")
    event = only_new(storage, before)
    assert event.type == "version.promoted"
    # Addressed by id, the event still names the prompt.
    assert (event.prompt_id, event.prompt_name) == (prompt_id, "greeting")
    assert (event.version, event.version_id, event.status) == (
        2,
        promotion.version.version_id,
        "published",
    )
    assert event.previous_version == 1
    assert (event.actor, event.request_id, event.at) == (OTHER, "r", now)


def test_first_promotion_has_no_previous_version(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    storage.create_version(ORG, "greeting", "c", USER)
    before = newest(storage)
    storage.promote(ORG, "greeting", "1", USER)
    event = only_new(storage, before)
    assert event.type == "version.promoted" and event.previous_version is None


def test_rollback_writes_one_promotion_event(storage: Storage, prompt_id: str, clock) -> None:
    storage.promote(ORG, "greeting", "2", USER)
    before, now = newest(storage), clock.advance(1)
    promotion = storage.rollback(ORG, "greeting", OTHER, request_id="r")
    event = only_new(storage, before)
    assert event.type == "version.promoted"
    assert (event.version, event.version_id, event.status, event.previous_version) == (
        1,
        promotion.version.version_id,
        "published",
        2,
    )
    assert (event.actor, event.request_id, event.at) == (OTHER, "r", now)


def test_delete_prompt_writes_one_event(storage: Storage, prompt_id: str, clock) -> None:
    before, now = newest(storage), clock.advance(1)
    storage.delete_prompt(ORG, "greeting", actor=OTHER, request_id="r")
    event = only_new(storage, before)
    assert event.type == "prompt.deleted"
    assert (event.prompt_id, event.prompt_name, event.version) == (prompt_id, "greeting", None)
    assert (event.actor, event.request_id, event.at) == (OTHER, "r", now)
    # The log outlives the prompt.
    assert [e.type for e in log(storage)][-1] == "prompt.deleted"


def test_every_type_is_written_and_ids_increase(storage: Storage, prompt_id: str) -> None:
    storage.edit_version(ORG, "greeting", "2", "x")
    storage.unarchive_version(ORG, "greeting", "3")
    storage.delete_version(ORG, "greeting", "3")
    storage.delete_prompt(ORG, "greeting")
    events = log(storage)
    # review.* events: tests/storage/test_storage_reviews.py; rollout.*:
    # tests/storage/test_storage_rollouts.py
    assert {e.type for e in events} == {
        t for t in EVENT_TYPES if not t.startswith(("review.", "rollout."))
    }
    positions = [event_position(e.id) for e in events]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    bounds = storage.event_log_bounds(ORG)
    assert (bounds.oldest, bounds.newest) == (events[0].id, events[-1].id)
    assert not bounds.trimmed


REFUSED: list[tuple[str, Callable[[Storage], object], type[StorageError]]] = [
    ("prompt exists", lambda s: s.create_prompt(ORG, "greeting"), PromptExists),
    ("no prompt: version", lambda s: s.create_version(ORG, "nope", "c", USER), NotFound),
    ("no prompt: delete", lambda s: s.delete_prompt(ORG, "nope"), NotFound),
    ("no version: edit", lambda s: s.edit_version(ORG, "greeting", "9", "c"), NotFound),
    ("no version: promote", lambda s: s.promote(ORG, "greeting", "v_0", USER), NotFound),
    ("no version: archive", lambda s: s.archive_version(ORG, "greeting", "9"), NotFound),
    ("no version: unarchive", lambda s: s.unarchive_version(ORG, "greeting", "9"), NotFound),
    ("no version: delete", lambda s: s.delete_version(ORG, "greeting", "9"), NotFound),
    ("edit published", lambda s: s.edit_version(ORG, "greeting", "1", "c"), LifecycleError),
    ("edit archived", lambda s: s.edit_version(ORG, "greeting", "3", "c"), LifecycleError),
    ("promote published", lambda s: s.promote(ORG, "greeting", "1", USER), LifecycleError),
    ("promote archived", lambda s: s.promote(ORG, "greeting", "3", USER), LifecycleError),
    ("archive published", lambda s: s.archive_version(ORG, "greeting", "1"), LifecycleError),
    ("archive archived", lambda s: s.archive_version(ORG, "greeting", "3"), LifecycleError),
    ("unarchive draft", lambda s: s.unarchive_version(ORG, "greeting", "2"), LifecycleError),
    ("delete published", lambda s: s.delete_version(ORG, "greeting", "1"), LifecycleError),
    (
        "guarded promotion, production changed",
        lambda s: s.promote(ORG, "greeting", "2", USER, expected_production=3),
        ProductionChanged,
    ),
    ("rollback, nothing before", lambda s: s.rollback(ORG, "greeting", USER), LifecycleError),
    (
        "rollback, never production",
        lambda s: s.rollback(ORG, "greeting", USER, to_version=2),
        LifecycleError,
    ),
    (
        "guarded rollback, production changed",
        lambda s: s.rollback(ORG, "greeting", USER, expected_production=None),
        ProductionChanged,
    ),
]


@pytest.mark.parametrize(("case", "change", "error"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_refused_change_writes_no_event(
    storage: Storage,
    prompt_id: str,
    case: str,
    change: Callable[[Storage], object],
    error: type[StorageError],
) -> None:
    before = log(storage)
    with pytest.raises(error):
        change(storage)
    assert log(storage) == before


def test_orgs_have_separate_logs(storage: Storage) -> None:
    storage.create_prompt("acme", "greeting")
    storage.create_prompt("other", "greeting")
    storage.create_prompt("other", "farewell")
    assert [e.prompt_name for e in log(storage, "acme")] == ["greeting"]
    assert [e.prompt_name for e in log(storage, "other")] == ["greeting", "farewell"]


def test_events_after_is_exclusive_and_bounded(storage: Storage) -> None:
    for i in range(5):
        storage.create_prompt(ORG, f"p{i}")
    events = log(storage)
    assert storage.events_after(ORG, events[1].id, 2) == events[2:4]
    assert storage.events_after(ORG, events[-1].id, 10) == []
    # An id above every kept one (another log's, or a future one) finds nothing.
    assert storage.events_after(ORG, "99999999999999-0", 10) == []


@pytest.mark.parametrize("bad", ["", "abc", "1", "1-", "-1", "1-2-3", "1-x", "\uff11-2", "1-2\n"])
def test_an_event_id_that_cannot_be_one_is_invalid(storage: Storage, bad: str) -> None:
    with pytest.raises(InvalidInput):
        storage.events_after(ORG, bad, 10)
    with pytest.raises(InvalidInput):
        storage.wait_for_events(ORG, bad, 0.01, 10)


def test_event_position_orders_ids_numerically() -> None:
    assert event_position("10-0") > event_position("9-5") > event_position("9-4")
    with pytest.raises(InvalidInput):
        event_position(f"{2**64}-0")


# A wait long enough that a test which sat it out is seen to have done so, however
# loaded the machine: these tests say what ends a wait, not how fast (bench/ measures).
LONG_WAIT = 60.0


def test_wait_returns_at_once_when_events_are_there(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    started = time.monotonic()
    [event] = storage.wait_for_events(ORG, START, LONG_WAIT, 10)
    assert event.type == "prompt.created"
    assert time.monotonic() - started < LONG_WAIT  # it did not wait


def test_wait_gives_nothing_when_nothing_comes(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    started = time.monotonic()
    assert storage.wait_for_events(ORG, newest(storage), 0.3, 10) == []
    assert 0.25 <= time.monotonic() - started < LONG_WAIT  # the wait asked for


def test_wait_wakes_for_a_change_made_meanwhile(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    after = newest(storage)
    got: list[Event] = []
    waiting = threading.Thread(
        target=lambda: got.extend(storage.wait_for_events(ORG, after, LONG_WAIT, 10))
    )
    started = time.monotonic()
    waiting.start()
    time.sleep(0.2)  # let the waiter block first: a real wait is the point here
    storage.create_prompt(ORG, "farewell")
    waiting.join(2 * LONG_WAIT)
    assert [e.prompt_name for e in got] == ["farewell"]
    # Woken by the change, not by the end of the wait.
    assert time.monotonic() - started < LONG_WAIT


def test_concurrent_changes_keep_the_log_in_their_order(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    created = all_at_once(16, lambda i: storage.create_version(ORG, "greeting", f"c{i}", USER))
    assert not [r for r in created if isinstance(r, Exception)]
    promoted = all_at_once(16, lambda i: storage.promote(ORG, "greeting", str(i + 1), USER))
    wins = [r for r in promoted if not isinstance(r, Exception)]
    assert all(isinstance(r, LifecycleError) for r in promoted if isinstance(r, Exception))

    events = log(storage)
    assert len(events) == 1 + 16 + len(wins)
    # Numbers were handed out in the order the events were written.
    numbers = [e.version for e in events if e.type == "version.created"]
    assert numbers == list(range(1, 17))
    # Each promotion replaced the one logged before it, so the log has them in order;
    # and it agrees with the promotion history.
    promotions = [e for e in events if e.type == "version.promoted"]
    assert len(promotions) == len(wins)
    previous = None
    for event in promotions:
        assert event.previous_version == previous
        previous = event.version
    history = reversed(storage.list_history(ORG, "greeting", limit=200).items)
    assert [r.version_number for r in history] == [e.version for e in promotions]


def test_trimming_keeps_at_least_the_bound(storage: Storage) -> None:
    storage.event_log_size = 20
    for i in range(300):
        storage.create_prompt(ORG, f"p{i:03d}")
    events = log(storage)
    # The newest events are all there, in order, with nothing missing among them...
    assert len(events) >= 20
    assert [e.prompt_name for e in events] == [f"p{i:03d}" for i in range(300 - len(events), 300)]
    # ... and the oldest ones went, which the bounds tell.
    assert len(events) < 300
    bounds = storage.event_log_bounds(ORG)
    assert (bounds.oldest, bounds.newest, bounds.trimmed) == (events[0].id, events[-1].id, True)


def test_a_log_at_its_bound_has_dropped_nothing(storage: Storage) -> None:
    storage.event_log_size = 20
    for i in range(20):
        storage.create_prompt(ORG, f"p{i:03d}")
    bounds = storage.event_log_bounds(ORG)
    assert len(log(storage)) == 20 and not bounds.trimmed
