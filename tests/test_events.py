"""promptsvc.events: one reader per org fans the log out to followers; followers behind
its buffer read the log; a dropped id gives Reset; the hub bounds and ends followers.

On the memory backend and fakeredis (the hub only uses the Storage interface; the API
tests run it on real Redis too).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import fakeredis
import pytest

from promptsvc.events import START, EventHub, Reset, Saturated
from storage import Event, Storage
from storage.memory import MemoryStorage
from storage.redis import RedisStorage

ORG = "acme"
# How long a read waits for what the test expects: it returns as soon as that is there,
# so only a failing test waits this long, however loaded the machine.
WAIT = 30.0


@pytest.fixture(params=["memory", "fakeredis"])
def storage(request: pytest.FixtureRequest) -> Iterator[Storage]:
    if request.param == "memory":
        yield MemoryStorage()
        return
    store = RedisStorage(fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True))
    yield store
    store.close()


def hub_on(storage: Storage, **options: object) -> EventHub:
    return EventHub(storage, read_timeout=0.2, **options)  # type: ignore[arg-type]


def names(items: list[Event | Reset]) -> list[str]:
    return [item.prompt_name for item in items if isinstance(item, Event)]


def test_a_follower_from_now_sees_only_what_comes(storage: Storage) -> None:
    storage.create_prompt(ORG, "old")
    hub = hub_on(storage)
    follower = hub.follow(ORG, None)
    try:
        assert follower.read(0.1) == []
        storage.create_prompt(ORG, "new")
        assert names(follower.read(WAIT)) == ["new"]
    finally:
        follower.close()
        hub.close()


def test_a_follower_from_now_joining_a_running_feed_starts_at_its_newest(
    storage: Storage,
) -> None:
    hub = hub_on(storage)
    first = hub.follow(ORG, None)
    try:
        storage.create_prompt(ORG, "seen-by-first")
        assert names(first.read(WAIT)) == ["seen-by-first"]
        second = hub.follow(ORG, None)
        storage.create_prompt(ORG, "seen-by-both")
        assert names(second.read(WAIT)) == ["seen-by-both"]
        second.close()
    finally:
        first.close()
        hub.close()


def test_a_follower_behind_the_buffer_reads_the_log_in_order(storage: Storage) -> None:
    hub = hub_on(storage, buffer_size=3, page_size=4)
    first = hub.follow(ORG, None)
    slow = hub.follow(ORG, None)
    try:
        for i in range(10):
            storage.create_prompt(ORG, f"p{i}")
        # The first one keeps up: everything through the buffer (the reader may hand
        # the ten events over in more than one batch).
        seen: list[str] = []
        while len(seen) < 10:
            seen += names(first.read(WAIT))
        assert seen == [f"p{i}" for i in range(10)]
        # The slow one starts reading only now: the buffer holds the last 3, so the
        # others come from the log, a page of 4 at a time.
        pages = []
        while sum(len(page) for page in pages) < 10:
            pages.append(names(slow.read(WAIT)))
        assert [name for page in pages for name in page] == [f"p{i}" for i in range(10)]
        assert max(len(page) for page in pages) <= 4
    finally:
        first.close()
        slow.close()
        hub.close()


def test_an_id_the_log_dropped_gives_reset_then_live(storage: Storage) -> None:
    storage.event_log_size = 5
    storage.create_prompt(ORG, "first")
    first = storage.events_after(ORG, START, 1)[0].id
    for i in range(300):
        storage.create_prompt(ORG, f"p{i}")
    newest = storage.event_log_bounds(ORG).newest
    hub = hub_on(storage)
    follower = hub.follow(ORG, first)
    try:
        assert follower.read(WAIT) == [Reset(str(newest))]
        storage.create_prompt(ORG, "live")
        assert names(follower.read(WAIT)) == ["live"]
    finally:
        follower.close()
        hub.close()


def test_closing_the_hub_ends_waiting_reads(storage: Storage) -> None:
    hub = hub_on(storage)
    follower = hub.follow(ORG, None)
    threading.Timer(0.2, hub.close).start()
    started = time.monotonic()
    assert follower.read(60) == []
    # Ended by the close, well before the read's own 60 s (a deadline, not a speed).
    assert follower.ended and time.monotonic() - started < 30
    follower.close()


def test_a_reader_stops_once_its_followers_left(storage: Storage) -> None:
    hub = hub_on(storage)
    follower = hub.follow(ORG, None)
    reader = hub._feeds[ORG].reader
    follower.close()
    reader.join(30)
    assert not reader.is_alive() and ORG not in hub._feeds


def test_followers_beyond_the_bound_are_refused(storage: Storage) -> None:
    hub = hub_on(storage, max_followers=2)
    followers = [hub.follow(ORG, None), hub.follow("other", None)]
    with pytest.raises(Saturated):
        hub.follow(ORG, None)
    followers.pop().close()
    followers.append(hub.follow(ORG, None))  # room again
    for follower in followers:
        follower.close()
    hub.close()


def test_poll_from_now_and_after_an_id(storage: Storage) -> None:
    hub = hub_on(storage)
    assert hub.poll(ORG, None, 0, 10).last_id == START
    storage.create_prompt(ORG, "a")
    now = hub.poll(ORG, None, 0, 10)
    assert now.items == [] and now.last_id == storage.event_log_bounds(ORG).newest
    storage.create_prompt(ORG, "b")
    storage.create_prompt(ORG, "c")
    page = hub.poll(ORG, now.last_id, 0, 1)
    assert [e.prompt_name for e in page.items] == ["b"]
    assert [e.prompt_name for e in hub.poll(ORG, page.last_id, 0, 10).items] == ["c"]
    hub.close()


def test_a_waiting_poll_answers_when_an_event_comes(storage: Storage) -> None:
    hub = hub_on(storage)
    after = hub.poll(ORG, None, 0, 10).last_id
    threading.Timer(0.3, lambda: storage.create_prompt(ORG, "late")).start()
    started = time.monotonic()
    answer = hub.poll(ORG, after, 60, 10)
    assert [e.prompt_name for e in answer.items] == ["late"]
    assert time.monotonic() - started < 30  # woken by the event, not the wait's end
    hub.close()
