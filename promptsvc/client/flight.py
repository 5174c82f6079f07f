"""Single flight: concurrent cache misses for one key share one request.

The first caller for a key (the leader) runs the fetch; callers arriving while it runs
wait for its outcome, value or exception, instead of sending their own request.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Call(Generic[T]):
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: T | None = None
        self.error: BaseException | None = None


class SingleFlight(Generic[T]):
    """For threads: one ``fetch`` per key at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, _Call[T]] = {}

    def do(self, key: str, fetch: Callable[[], T]) -> T:
        with self._lock:
            call = self._calls.get(key)
            leader = call is None
            if call is None:
                call = self._calls[key] = _Call()
        if not leader:
            call.done.wait()
            if call.error is not None:
                raise call.error
            return call.result  # type: ignore[return-value]
        try:
            call.result = fetch()
            return call.result
        except BaseException as exc:
            call.error = exc
            raise
        finally:
            with self._lock:
                del self._calls[key]
            call.done.set()


class AsyncSingleFlight(Generic[T]):
    """For tasks of one event loop: the fetch runs as a task every caller awaits.

    A caller that is cancelled stops waiting; the fetch goes on for the others (and
    still fills the cache).
    """

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Future[T]] = {}

    async def do(self, key: str, fetch: Callable[[], Awaitable[T]]) -> T:
        task = self._tasks.get(key)
        if task is None:
            task = asyncio.ensure_future(fetch())
            self._tasks[key] = task
            task.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(task)

    def _finished(self, key: str, task: asyncio.Future[T]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
        if not task.cancelled():
            task.exception()  # retrieved: no "never retrieved" warning if all waiters left
