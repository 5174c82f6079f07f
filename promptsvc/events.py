"""Change events for the API: the log's readers in one worker process.

A stream (``GET /api/v1/events`` as Server-Sent Events) stays open for minutes, and one
instance must hold ten thousand of them. If each read the log itself, each would hold a
Redis connection in a blocking ``XREAD``. Instead each process has one
:class:`EventHub`; for every org with at least one open stream or waiting long poll, the
hub runs one reader thread that does the blocking read (``Storage.wait_for_events``),
keeps the newest events in a bounded buffer (a :class:`Feed`) and wakes every waiter of
that org: threads asleep on a lock of their own (:meth:`Follower.read`), and the feed's
listeners, told once per batch (the org's channel on the process's stream loop, which
writes the batch to every stream there: promptsvc.event_streams). Neither costs
anything in Redis.

A waiter that is behind the buffer (it asked for an old id, or it was slow to take what
came) reads the log itself, a page at a time, until it is back in the buffer. An id
older than the log keeps, when the log has dropped events since, gives a :class:`Reset`
instead: the reader missed events and must forget what it derived from them.

A hub takes at most ``max_followers`` followers (open streams, waiting long polls) at
once and refuses more (:class:`Saturated`); so that one token (or org) cannot take them
all, a token subject holds at most ``max_per_subject`` and an org at most
``max_per_org`` of them (:class:`OverCap`).

Ids are ordered by ``storage.ids.event_position``; ``START`` is below every id.
:func:`close_all` ends every stream of the process (gunicorn.conf.py calls it when a
worker is told to stop, so that its clients reconnect to another one at once).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from storage import Event, Storage, StorageUnavailable, event_position

log = logging.getLogger(__name__)

START = "0-0"
Position = tuple[int, int]
# A reader whose storage failed tries again after 0.1 s, then twice as long each time up
# to this: events reach the streams at most about this late after an outage ends.
LONGEST_PAUSE = 1.0

_HUBS: weakref.WeakSet[EventHub] = weakref.WeakSet()


def close_all() -> None:
    """Close every hub of this process (:meth:`EventHub.close`)."""
    for hub in list(_HUBS):
        hub.close()


class Saturated(Exception):
    """This process already holds as many followers as it may."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} event streams are open on this server already")
        self.limit = limit


class OverCap(Exception):
    """One token subject, or one org, already holds as many followers as it may here."""

    def __init__(self, scope: str, limit: int) -> None:
        super().__init__(f"this {scope} holds {limit} event streams on this server already")
        self.scope = scope  # "client" or "org"
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Reset:
    """The asked id is older than the log keeps: events after it are lost. Go on from
    ``last_id``, the newest event now, after forgetting what earlier events said."""

    last_id: str


@dataclass(frozen=True, slots=True)
class Poll:
    """A long poll's answer: events after the asked id (oldest first), the id to ask
    after next time, and whether the asked id was too old (``Reset``)."""

    items: list[Event]
    last_id: str
    reset: bool = False


Item = Event | Reset


def as_poll(cursor: str, items: list[Item]) -> Poll:
    """A long poll's answer from what was read after ``cursor``."""
    if items and isinstance(items[0], Reset):
        return Poll([], items[0].last_id, reset=True)
    events = [item for item in items if isinstance(item, Event)]
    return Poll(events, events[-1].id if events else cursor)


class EventHub:
    """Follows org event logs for the streams and long polls of this process.

    ``max_followers`` bounds the followers open at once (None: no bound), and
    ``max_per_subject`` and ``max_per_org`` those of one token subject and of one org;
    ``read_timeout`` bounds each blocking read of a reader thread (so that a reader
    whose last waiter left stops soon after); ``buffer_size`` is how many recent events
    each org keeps here; ``page_size`` how many events one read of the log returns.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        max_followers: int | None = None,
        max_per_subject: int | None = None,
        max_per_org: int | None = None,
        read_timeout: float = 5.0,
        buffer_size: int = 1000,
        page_size: int = 500,
    ) -> None:
        self.storage = storage
        self.max_followers = max_followers
        self.max_per_subject = max_per_subject
        self.max_per_org = max_per_org
        self.read_timeout = read_timeout
        self.buffer_size = buffer_size
        self.page_size = page_size
        self._lock = threading.Lock()  # guards _feeds and the counts of followers
        self._feeds: dict[str, Feed] = {}
        self._followers = 0  # open Followers, guarded by _lock
        self._by_subject: dict[str, int] = {}  # open Followers per subject, under _lock
        self._by_org: dict[str, int] = {}  # open Followers per org, under _lock
        self._closed = threading.Event()
        _HUBS.add(self)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """End every stream and reader of this hub now (the worker is stopping): open
        streams end at once, and their clients reconnect elsewhere with their last id."""
        self._closed.set()
        with self._lock:
            feeds = list(self._feeds.values())
        for feed in feeds:
            feed.close()

    def newest(self, org: str) -> str:
        """The id of the org's newest event (``START`` for an empty log)."""
        return self.storage.event_log_bounds(org).newest or START

    def read_log(self, org: str, after: str, limit: int) -> list[Item]:
        """Up to ``limit`` events after ``after``, read from the log itself; or one
        Reset when events after ``after`` are no longer in the log."""
        bounds = self.storage.event_log_bounds(org)
        if (
            bounds.trimmed
            and bounds.oldest is not None
            and event_position(after) < event_position(bounds.oldest)
        ):
            return [Reset(bounds.newest or START)]
        return list(self.storage.events_after(org, after, limit))

    def follow(self, org: str, after: str | None, subject: str = "") -> Follower:
        """A place in the org's log from which to read what comes after ``after``
        (None: after the newest event now), for the token subject ``subject``. Close it
        when done.

        Raises OverCap when the subject or the org holds as many followers as it may,
        Saturated when ``max_followers`` are open already, a StorageError when the log
        cannot be read now.
        """
        with self._lock:
            if self.max_per_subject is not None and (
                self._by_subject.get(subject, 0) >= self.max_per_subject
            ):
                raise OverCap("client", self.max_per_subject)
            if self.max_per_org is not None and self._by_org.get(org, 0) >= self.max_per_org:
                raise OverCap("org", self.max_per_org)
            if self.max_followers is not None and self._followers >= self.max_followers:
                raise Saturated(self.max_followers)
            self._count(org, subject, 1)
        try:
            feed = self._join(org)
        except BaseException:
            with self._lock:
                self._count(org, subject, -1)
            raise
        try:
            if after is None:
                after = feed.newest
            return Follower(self, feed, after, subject)
        except BaseException:
            self._leave(feed, subject)
            raise

    def poll(self, org: str, after: str | None, wait: float, limit: int, subject: str = "") -> Poll:
        """Events after ``after`` (None: after the newest now), waiting up to ``wait``
        seconds for the first one when there are none yet."""
        cursor = self.newest(org) if after is None else after
        items = self.read_log(org, cursor, limit)
        if not items and wait > 0 and not self.closed:
            follower = self.follow(org, cursor, subject)
            try:
                items = follower.read(wait, limit)
            finally:
                follower.close()
        return as_poll(cursor, items)

    # -- feeds

    def _join(self, org: str) -> Feed:
        with self._lock:
            feed = self._feeds.get(org)
            if feed is not None:
                feed.followers += 1
                return feed
        # Read outside the lock: other orgs' streams need not wait for this org's Redis.
        start = self.newest(org)
        with self._lock:
            feed = self._feeds.get(org)
            if feed is None:
                feed = self._feeds[org] = Feed(self, org, start)
                feed.reader.start()
            feed.followers += 1
            return feed

    def _leave(self, feed: Feed, subject: str) -> None:
        with self._lock:
            feed.followers -= 1
            self._count(feed.org, subject, -1)

    def _count(self, org: str, subject: str, change: int) -> None:
        """Add ``change`` to the counts of open followers (under ``_lock``)."""
        self._followers += change
        for counts, key in ((self._by_subject, subject), (self._by_org, org)):
            left = counts.get(key, 0) + change
            if left > 0:
                counts[key] = left
            else:
                counts.pop(key, None)

    def _keep_reading(self, feed: Feed) -> bool:
        """Whether ``feed``'s reader goes on; when not, it is no longer joinable."""
        with self._lock:
            if feed.followers > 0 and not self.closed:
                return True
            if self._feeds.get(feed.org) is feed:
                del self._feeds[feed.org]
            return False


@dataclass(frozen=True, slots=True)
class _Recent:
    """A feed's recent events, replaced whole on every change so that followers read it
    without a lock: every event after ``base`` is in ``events``, oldest first, each with
    its position."""

    base: Position
    events: tuple[tuple[Position, Event], ...] = ()

    @property
    def newest(self) -> Position:
        return self.events[-1][0] if self.events else self.base

    def after(
        self, position: Position, limit: int | None = None, upto: Position | None = None
    ) -> list[Event] | None:
        """The events after ``position`` (and not after ``upto``), at most ``limit``;
        None when this no longer reaches back that far."""
        if position < self.base:
            return None
        found: list[Event] = []
        for at, event in reversed(self.events):  # followers are usually near the end
            if at <= position:
                break
            if upto is None or at <= upto:
                found.append(event)
        found.reverse()
        return found[:limit]

    def extended(self, batch: list[Event], size: int) -> _Recent:
        events = self.events + tuple((event_position(e.id), e) for e in batch)
        if len(events) <= size:
            return _Recent(self.base, events)
        return _Recent(events[-size - 1][0], events[-size:])


class Feed:
    """One org's recent events in this process, kept by one reader thread.

    Followers with nothing new to read wait each on a lock of their own, which the
    reader releases when events come: a thousand of them wake without queueing for one
    shared lock (as a Condition's waiters would, each in turn), so the first frames go
    out while the reader is still waking the others. Listeners (:meth:`listen`) are
    called once for every batch of events, and when the hub closes.
    """

    def __init__(self, hub: EventHub, org: str, start: str) -> None:
        self.hub = hub
        self.org = org
        self.recent = _Recent(event_position(start))
        self.newest = start
        self.lock = threading.Lock()  # guards replacing ``recent``, ``waiting``, ``listeners``
        self.waiting: set[threading.Lock] = set()  # wake locks of waiting threads
        self.listeners: set[Callable[[], None]] = set()
        self.followers = 0  # guarded by the hub's lock
        self.reader = threading.Thread(target=self._read, name=f"events:{org}", daemon=True)
        self._paused = threading.Event()  # the reader's pause after a failure

    def wait(self, wake: threading.Lock, position: Position, timeout: float) -> None:
        """Sleep until something comes after ``position``, the hub closes, or
        ``timeout`` seconds pass; it may also return early for nothing.

        ``wake`` is the follower's own lock. It is held (armed) whenever the follower is
        registered, and the reader releases each registered one once, so a release that
        comes after the follower stopped waiting only makes its next wait return early.
        """
        wake.acquire(blocking=False)  # armed, taking in a release that came late
        with self.lock:
            if self.recent.after(position, 1) != [] or self.hub.closed:
                return  # it came meanwhile, or the follower is behind: no need to sleep
            self.waiting.add(wake)
        try:
            wake.acquire(timeout=timeout)
        finally:
            with self.lock:
                self.waiting.discard(wake)

    def listen(self, listener: Callable[[], None]) -> _Recent:
        """Call ``listener`` (from the reader's thread) after every change of
        :attr:`recent` from now on; returns :attr:`recent` as it is now."""
        with self.lock:
            self.listeners.add(listener)
            return self.recent

    def unlisten(self, listener: Callable[[], None]) -> None:
        with self.lock:
            self.listeners.discard(listener)

    def wake_all(self) -> None:
        with self.lock:
            woken = list(self.waiting)
            self.waiting.clear()
            listeners = list(self.listeners)
        for wake in woken:
            wake.release()
        for listener in listeners:
            listener()

    def _read(self) -> None:
        pause = 0.1
        while self.hub._keep_reading(self):
            try:
                events = self.hub.storage.wait_for_events(
                    self.org, self.newest, self.hub.read_timeout, self.hub.page_size
                )
            except Exception as exc:
                # Storage unreachable (or a bug): the streams stay open, and the reader
                # goes on from the same id once the log answers, so nothing is lost.
                log.warning(
                    "reading the event log of %s failed: %s",
                    self.org,
                    exc,
                    exc_info=not isinstance(exc, StorageUnavailable),
                )
                self._paused.wait(pause)  # close() ends the pause early
                pause = min(pause * 2, LONGEST_PAUSE)
                continue
            pause = 0.1
            if events:
                with self.lock:
                    self.recent = self.recent.extended(events, self.hub.buffer_size)
                    self.newest = events[-1].id
                self.wake_all()

    def close(self) -> None:
        self._paused.set()
        self.wake_all()


def position_id(position: Position) -> str:
    """The event id of ``position`` (the inverse of ``event_position``)."""
    return f"{position[0]}-{position[1]}"


class Follower:
    """One reader's place in an org's log: :meth:`read` gives what came after it (in
    the caller's thread; a coroutine uses :meth:`take` and :meth:`catch_up` instead,
    as promptsvc.event_streams does)."""

    def __init__(self, hub: EventHub, feed: Feed, after: str, subject: str = "") -> None:
        self._hub = hub
        self.feed = feed
        self._subject = subject
        self.position = event_position(after)
        self.last_id = after
        self._wake = threading.Lock()
        self._closed = False

    @property
    def ended(self) -> bool:
        """The hub closed: no more events will come through it."""
        return self._hub.closed

    @property
    def page_size(self) -> int:
        return self._hub.page_size

    def read(self, timeout: float, limit: int | None = None) -> list[Item]:
        """What came after the last id read, oldest first: events, or one Reset. Waits
        up to ``timeout`` seconds when nothing came yet, then answers []."""
        limit = limit or self._hub.page_size
        deadline = time.monotonic() + timeout
        while not self.ended:
            found = self.take(limit)
            if found is None:  # behind the feed: read the log itself
                found = self.catch_up(limit)
            if found:
                return found
            if found is None:
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            self.feed.wait(self._wake, self.position, remaining)
        return []

    def take(self, limit: int, upto: Position | None = None) -> list[Item] | None:
        """What the feed holds after the last id read (and not after ``upto``), moving
        past it; None when the follower is behind the feed."""
        found = self.feed.recent.after(self.position, limit, upto)
        if found:
            self.moved(found[-1].id)
        return list(found) if found is not None else None

    def catch_up(self, limit: int) -> list[Item] | None:
        """What the log itself holds after the last id read (moving past it); None when
        the log has nothing after an id the feed has passed. It blocks on storage."""
        items = self._hub.read_log(self.feed.org, self.last_id, limit)
        if items:
            last = items[-1]
            self.moved(last.last_id if isinstance(last, Reset) else last.id)
            return items
        # The log has nothing after an id the feed has passed: it lost events (a Redis
        # without persistence restarted). Go on from the feed's start.
        self.moved(position_id(self.feed.recent.base))
        return None

    def moved(self, last_id: str) -> None:
        """The reader has had everything up to ``last_id``."""
        self.last_id = last_id
        self.position = event_position(last_id)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._hub._leave(self.feed, self._subject)
