"""Event streams and waiting long polls on the stream loop: an org's new events written to
all of its streams in one pass.

The hub (promptsvc.events) keeps, per org, one reader thread and a :class:`Feed` of the
newest events. On the process's stream loop (promptsvc.streaming) the org has one
:class:`Channel`, a listener of that feed. A stream that has sent everything up to the
newest event the channel has handed out (its *tail*) is *live*: the channel holds it, and
it does nothing on its own. When the reader brings events, it tells the channel with one
call to the loop, however many streams there are; the channel turns the events into SSE
frames once (chunk-framed once) and writes those same bytes to every live stream's
connection in one pass, waking no coroutine. A stream then costs one write call per
event batch, the least a socket can take.

A stream that is not at the tail (it replays from ``Last-Event-ID``, or the loop fell more
than the feed's buffer behind) catches up on its own coroutine, from the feed or, further
back, from the log (in the loop's executor: storage blocks), and is live again once it
reaches the tail.

Comment lines, and the end of a stream at its token's expiry, are kept by one timer per
channel that every :data:`TICK` seconds looks only at the streams due by then (a wheel of
due times): a quiet stream costs nothing between its comment lines. A waiting long poll
waits for the channel's next batch (:meth:`Channel.changed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from functools import lru_cache

from promptsvc.events import Feed, Follower, Item, Position, Reset, position_id
from promptsvc.http import json_body
from promptsvc.streaming import Connection, Payload, Serve
from storage import Event, StorageError

log = logging.getLogger(__name__)

STREAM_OPENED = b": stream open\n\n"
KEEP_ALIVE = b": keep-alive\n\n"
# The step of a channel's timer: a comment line or an expiry is at most this late (with
# 14 s of heartbeat, never 15 s without a line). It runs while the channel has streams.
TICK = 0.1


def frame(item: Item) -> bytes:
    if isinstance(item, Reset):
        data = json_body({"last_id": item.last_id}).decode()
        return f"id: {item.last_id}\nevent: reset\ndata: {data}\n\n".encode()
    return event_frame(item)


@lru_cache(maxsize=4096)
def event_frame(event: Event) -> bytes:
    """One event's frame, built once for all the streams that send it. JSON escapes
    line breaks inside strings, so ``data`` is one line."""
    data = json_body(event.to_json()).decode()
    return f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n".encode()


def serve_stream(follower: Follower, until: float, heartbeat: float) -> Serve:
    """The SSE body on the stream loop: frames of the org's events after the follower's
    place, until ``until`` (epoch seconds, the token's expiry) or until the hub closes,
    and a comment line after ``heartbeat`` seconds of silence. The loop ends it at once
    when the client leaves."""

    async def serve(connection: Connection) -> None:
        channel = Channel.enter(follower.feed)
        try:
            connection.send(STREAM_OPENED)
            await channel.follow(connection, follower, until, heartbeat)
        except StorageError:
            log.warning("event stream ended by a storage error", exc_info=True)
        finally:
            channel.leave()
            follower.close()

    return serve


async def wait_for_events(follower: Follower, wait: float, limit: int) -> list[Item]:
    """:meth:`Follower.read` on the stream loop: what came after the follower's place,
    waiting up to ``wait`` seconds for it ([] when nothing came)."""
    channel = Channel.enter(follower.feed)
    loop = channel.loop
    deadline = loop.time() + wait
    try:
        while not follower.ended:
            found = follower.take(limit)
            if found is None:  # behind the feed: read the log itself
                found = await loop.run_in_executor(None, follower.catch_up, limit)
            if found:
                return found
            if found is None:
                continue
            left = deadline - loop.time()
            if left <= 0:
                return []
            await channel.changed(left)
        return []
    finally:
        channel.leave()


class _Stream:
    """An SSE answer in a channel; times are the loop's."""

    __slots__ = ("connection", "done", "follower", "heartbeat", "sent_at", "slot", "until")

    def __init__(
        self, connection: Connection, follower: Follower, heartbeat: float, until: float
    ) -> None:
        self.connection = connection
        self.follower = follower
        self.heartbeat = heartbeat
        self.until = until
        self.sent_at = -math.inf  # when this stream last sent anything of its own
        self.done: asyncio.Future[bool] | None = None  # set while live
        self.slot = -1  # its place in the channel's wheel (older entries are stale)


def _settle(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)


class Channel:
    """One org's streams and waiting long polls on one loop (made and used in that
    loop; :meth:`enter` and :meth:`leave` share it among them)."""

    def __init__(self, feed: Feed, loop: asyncio.AbstractEventLoop) -> None:
        self.feed = feed
        self.loop = loop
        self.users = 0
        # Every live stream has sent everything up to here; the feed may be further.
        self.tail: Position = feed.listen(self._notify).newest
        self.live: set[_Stream] = set()
        self.broadcast_at = -math.inf  # when the live streams last had a batch
        self.waiters: set[asyncio.Future[bool]] = set()
        self.wheel: dict[int, list[_Stream]] = {}  # tick number -> streams due by then
        self.timer: asyncio.TimerHandle | None = None

    @classmethod
    def enter(cls, feed: Feed) -> Channel:
        """The channel of ``feed`` on the running loop, made on first use."""
        loop = asyncio.get_running_loop()
        channel = _CHANNELS.get((loop, feed))
        if channel is None:
            channel = _CHANNELS[(loop, feed)] = cls(feed, loop)
        channel.users += 1
        return channel

    def leave(self) -> None:
        self.users -= 1
        if self.users == 0:
            self.feed.unlisten(self._notify)
            del _CHANNELS[(self.loop, self.feed)]
            if self.timer is not None:
                self.timer.cancel()

    # -- a stream

    async def follow(
        self, connection: Connection, follower: Follower, until: float, heartbeat: float
    ) -> None:
        """Send what comes after the follower's place to ``connection``, until the
        token expires at ``until`` (epoch seconds) or the hub closes."""
        loop = self.loop
        stream = _Stream(connection, follower, heartbeat, loop.time() + until - time.time())
        stream.sent_at = loop.time()
        while not follower.ended and stream.until > loop.time():
            if follower.position == self.tail:
                if await self._hold(stream):
                    return
                continue
            if follower.position < self.tail:
                found = follower.take(follower.page_size, self.tail)
                if found is None:  # behind the feed: read the log itself
                    found = await loop.run_in_executor(None, follower.catch_up, follower.page_size)
                if found:
                    connection.send(b"".join(frame(item) for item in found))
                    stream.sent_at = loop.time()
                    continue
                if found is None:
                    continue
            # Ahead of the channel (the log had what the loop has not heard of yet).
            quiet = stream.sent_at + heartbeat - loop.time()
            woken = await self.changed(min(quiet, stream.until - loop.time()))
            if not woken and loop.time() >= stream.sent_at + heartbeat:
                connection.send(KEEP_ALIVE)
                stream.sent_at = loop.time()

    async def _hold(self, stream: _Stream) -> bool:
        """Keep ``stream`` live until it ends (True: its token expired or the hub
        closed) or falls behind (False: the loop missed events the feed no longer
        has; the follower is at the tail it had)."""
        done = stream.done = self.loop.create_future()
        self.live.add(stream)
        self._due(stream)
        try:
            return await done
        finally:
            self.live.discard(stream)
            stream.done = None

    def _end(self, stream: _Stream, ended: bool) -> None:
        self.live.discard(stream)
        if stream.done is not None:
            _settle(stream.done, ended)

    # -- the feed's batches

    def _notify(self) -> None:
        """From the reader's thread: the feed has changed."""
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody to tell
            self.loop.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        """Hand what the feed has after the tail to every live stream: one payload,
        written to each connection in turn."""
        recent = self.feed.recent
        if self.feed.hub.closed:
            for stream in list(self.live):
                self._end(stream, True)
        else:
            new = recent.after(self.tail)
            if new is None:
                # More came since the last batch than the feed keeps: the live streams
                # read the rest from the log, from where they are.
                behind = position_id(self.tail)
                for stream in list(self.live):
                    stream.follower.moved(behind)
                    self._end(stream, False)
            elif new:
                payload = Payload(b"".join(frame(event) for event in new))
                self.broadcast_at = self.loop.time()
                for stream in self.live:
                    stream.connection.send(payload)
            self.tail = recent.newest
        waiters, self.waiters = self.waiters, set()
        for waiter in waiters:
            _settle(waiter, True)

    async def changed(self, timeout: float) -> bool:
        """Wait for the channel's next batch (True) or ``timeout`` seconds (False)."""
        if timeout <= 0:
            return False
        woken: asyncio.Future[bool] = self.loop.create_future()
        self.waiters.add(woken)
        timer = self.loop.call_later(timeout, _settle, woken, False)
        try:
            return await woken
        finally:
            timer.cancel()
            self.waiters.discard(woken)

    # -- comment lines and expiry

    def _due(self, stream: _Stream) -> None:
        """Put ``stream`` in the wheel at its next comment line or its expiry."""
        quiet = max(stream.sent_at, self.broadcast_at) + stream.heartbeat
        stream.slot = math.ceil(min(quiet, stream.until) / TICK)
        self.wheel.setdefault(stream.slot, []).append(stream)
        if self.timer is None:
            self.timer = self.loop.call_later(TICK, self._tick)

    def _tick(self) -> None:
        now = self.loop.time()
        current = math.floor(now / TICK)
        for slot in sorted(slot for slot in self.wheel if slot <= current):
            for stream in self.wheel.pop(slot):
                if stream.slot != slot or stream not in self.live:
                    continue  # it left, or it was put in again since
                if stream.until <= now:
                    self._end(stream, True)
                    continue
                if max(stream.sent_at, self.broadcast_at) + stream.heartbeat <= now:
                    stream.connection.send(KEEP_ALIVE)
                    stream.sent_at = now
                self._due(stream)
        self.timer = self.loop.call_later(TICK, self._tick) if self.wheel else None


_CHANNELS: dict[tuple[asyncio.AbstractEventLoop, Feed], Channel] = {}
