"""promptsvc.event_streams: on the stream loop, an org's channel writes each batch of
events to every live stream at once (one payload for all), streams behind catch up
before they join, a loop that missed more than the feed keeps still hands on every
event once and in order, and quiet streams get comment lines and end at expiry.

Streams are served to fake connections that record what is written to them, on a real
asyncio loop, with the memory backend (the API tests run them on real sockets).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable

from promptsvc.event_streams import KEEP_ALIVE, STREAM_OPENED, serve_stream, wait_for_events
from promptsvc.events import START, EventHub
from promptsvc.streaming import Connection, Payload
from storage.memory import MemoryStorage

ORG = "acme"
WAIT = 30.0  # a bound only a failing test reaches
HOUR = 3600.0


class Recorder(Connection):
    """A connection that keeps what is written to it."""

    def __init__(self) -> None:
        super().__init__(chunked=False)
        self.written: list[bytes | Payload] = []

    def send(self, data: bytes | Payload) -> None:
        self.written.append(data)

    @property
    def text(self) -> str:
        return b"".join(d.plain if isinstance(d, Payload) else d for d in self.written).decode()

    def names(self) -> list[str]:
        return re.findall(r'"prompt_name":"([^"]+)"', self.text)


async def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)  # polling what the loop's other tasks do


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), WAIT * 2))


def start(hub: EventHub, after: str | None, heartbeat: float = HOUR) -> tuple[Recorder, object]:
    follower = hub.follow(ORG, after)
    connection = Recorder()
    task = asyncio.get_running_loop().create_task(
        serve_stream(follower, time.time() + HOUR, heartbeat)(connection)
    )
    return connection, task


def test_a_batch_is_rendered_once_for_every_live_stream() -> None:
    storage = MemoryStorage()
    hub = EventHub(storage, read_timeout=0.2)

    async def test() -> None:
        streams = [start(hub, None) for _ in range(50)]
        await until(lambda: all(c.written == [STREAM_OPENED] for c, _ in streams))
        await asyncio.sleep(0.1)  # every stream joined the channel
        storage.create_prompt(ORG, "greeting")
        await until(lambda: all(c.names() == ["greeting"] for c, _ in streams))
        payloads = {id(c.written[-1]) for c, _ in streams}
        assert len(payloads) == 1 and isinstance(streams[0][0].written[-1], Payload)
        for _, task in streams:
            task.cancel()  # type: ignore[attr-defined]
        await until(lambda: hub._followers == 0)

    run(test)
    hub.close()


def test_a_stream_behind_catches_up_then_goes_live_without_repeats() -> None:
    storage = MemoryStorage()
    hub = EventHub(storage, read_timeout=0.2, buffer_size=3, page_size=4)
    for i in range(10):
        storage.create_prompt(ORG, f"p{i}")

    async def test() -> None:
        live, _ = start(hub, None)
        replaying, _ = start(hub, START)
        await until(lambda: len(replaying.names()) == 10)
        storage.create_prompt(ORG, "after")
        await until(lambda: "after" in replaying.names() and "after" in live.names())
        await asyncio.sleep(0.2)  # nothing more comes
        assert replaying.names() == [f"p{i}" for i in range(10)] + ["after"]
        assert live.names() == ["after"]
        hub.close()
        await until(lambda: hub._followers == 0)

    run(test)


def test_a_loop_that_missed_more_than_the_feed_keeps_hands_on_everything() -> None:
    """The reader brings more events than the feed's buffer while the loop is busy:
    the live streams read what the feed dropped from the log, once each, in order."""
    storage = MemoryStorage()
    hub = EventHub(storage, read_timeout=0.2, buffer_size=3, page_size=4)

    async def test() -> None:
        streams = [start(hub, None)[0] for _ in range(3)]
        await until(lambda: all(c.written == [STREAM_OPENED] for c in streams))
        await asyncio.sleep(0.1)
        feed = hub._feeds[ORG]
        for i in range(12):
            storage.create_prompt(ORG, f"p{i}")
        # The loop is held here (no await) until the feed has dropped some of them.
        deadline = time.monotonic() + WAIT
        while feed.newest != storage.event_log_bounds(ORG).newest:
            assert time.monotonic() < deadline
            time.sleep(0.01)  # the reader thread's progress, with the loop held
        await until(lambda: all(len(c.names()) == 12 for c in streams))
        await asyncio.sleep(0.2)
        for connection in streams:
            assert connection.names() == [f"p{i}" for i in range(12)]
        hub.close()
        await until(lambda: hub._followers == 0)

    run(test)


def test_quiet_streams_get_comment_lines_and_end_at_expiry() -> None:
    storage = MemoryStorage()
    hub = EventHub(storage, read_timeout=0.2)

    async def test() -> None:
        follower = hub.follow(ORG, None)
        connection = Recorder()
        started = time.monotonic()
        await serve_stream(follower, time.time() + 2.5, 0.4)(connection)
        assert time.monotonic() - started >= 2.0  # it ran until its expiry
        assert connection.written[0] == STREAM_OPENED
        assert set(connection.written[1:]) == {KEEP_ALIVE}
        assert len(connection.written) >= 3  # more than one, every 0.4 s
        assert hub._followers == 0

    run(test)
    hub.close()


def test_a_waiting_long_poll_on_the_loop_answers_the_first_event() -> None:
    storage = MemoryStorage()
    hub = EventHub(storage, read_timeout=0.2)

    async def test() -> None:
        follower = hub.follow(ORG, None)
        waiting = asyncio.get_running_loop().create_task(wait_for_events(follower, WAIT, 10))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        storage.create_prompt(ORG, "greeting")
        found = await waiting
        follower.close()
        assert [getattr(item, "prompt_name", None) for item in found] == ["greeting"]
        nothing = hub.follow(ORG, None)
        assert await wait_for_events(nothing, 0.2, 10) == []
        nothing.close()

    run(test)
    hub.close()
