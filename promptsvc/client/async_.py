"""AsyncPromptClient: the asyncio twin of PromptClient, same surface and behaviour."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Self, TypeVar

import httpx

from promptsvc.client.base import BaseClient
from promptsvc.client.cache import cache_key
from promptsvc.client.errors import PromptServiceError, ServerError, TransportError
from promptsvc.client.flight import AsyncSingleFlight
from promptsvc.client.flow import Done, Flow, NeedToken, Sleep, resume
from promptsvc.client.models import Fallback, PromptVersion
from promptsvc.client.reporting import TaskReporter, send_at_close
from promptsvc.client.watch import TaskWatcher

T = TypeVar("T")


class AsyncPromptClient(BaseClient[httpx.AsyncBaseTransport]):
    """PromptClient for asyncio: ``await get_prompt_version(...)``, ``async with``,
    ``await aclose()`` (``close`` is the same). Keywords as PromptClient, with
    ``transport`` an ``httpx.AsyncBaseTransport``.

    Use one instance per event loop: its token lock and single flight belong to a loop.
    The cache is the same thread-safe cache as PromptClient's. With ``watch=True`` the
    events stream is a task of that loop, started by ``async with``, or by the first
    call that misses the cache when the client was made outside a running loop.
    ``on_change`` runs in that loop, between events: it must not block.
    With ``preload``, ``await client.ready()`` (or ``async with``) preloads, then starts
    the watch; the snapshot (``snapshot_path``) is read in the constructor. Usage
    (``report_usage``) is sent by a task of that loop, started as the watch is;
    ``record_outcome`` is a plain call, ``await flush_usage()`` sends now and
    ``aclose()`` sends once more.
    """

    def _open(self, transport: httpx.AsyncBaseTransport | None) -> None:
        self._http = httpx.AsyncClient(transport=transport)
        self._token_lock = asyncio.Lock()
        self._flights: AsyncSingleFlight[PromptVersion] = AsyncSingleFlight()
        self._closed = False
        self._reporter = (
            None
            if self._usage is None
            else TaskReporter(self.usage_interval, lambda: self._drive(self._report_flow()))
        )
        self._watcher: TaskWatcher | None = None
        if self._watch is not None:
            self._watcher = TaskWatcher(
                self._watch,
                self._http,
                lambda stale: self._token(NeedToken(stale, self._policy.deadline())),
                lambda: self._drive(self._position_flow()),
            )

    def _start(self) -> None:
        if self._preloading:
            return  # ready() (or async with) preloads, then starts the watch
        self._start_without_requests()
        self._start_watching()

    def _start_watching(self) -> None:
        """Start the watch and the usage reporter in the running loop (none: the first
        call that misses the cache starts them)."""
        if self._preloading:
            return
        with contextlib.suppress(RuntimeError):  # no running loop
            if self._watcher is not None:
                self._watcher.start()
            if self._reporter is not None:
                self._reporter.start()

    async def ready(self) -> Self:
        """Preload (``preload=``) and start the watch, once; ``async with`` calls it.
        Until then, calls work but a preload has not filled the cache."""
        if self._preloading:
            await self._drive(self._startup_flow())
        self._start_watching()
        return self

    async def get_prompt_version(
        self,
        name: str,
        label: str | None = None,
        version: str | int | None = None,
        *,
        rollout_key: str | None = None,
        fallback: Fallback | None = None,
    ) -> PromptVersion:
        """As ``PromptClient.get_prompt_version``; a cache hit does not suspend."""
        key = cache_key(name, label, version)
        cached = self._cache.fresh(key)
        if cached is not None:
            if cached.is_stale:
                self.stale_served += 1
            else:
                self.hits += 1
            if not rollout_key or (rollout := cached.rollout) is None:
                return cached
            # Inline, as the hit itself: a key seen before costs one dict lookup more.
            try:
                return rollout.picks[rollout_key]
            except KeyError:
                return rollout.pick(cached, rollout_key)
        if rollout_key is not None and not isinstance(rollout_key, str):
            raise ValueError("rollout_key must be a string (a user or tenant id) or None")
        spare = self._spare(name, fallback)
        self.misses += 1
        self._start_watching()
        try:
            found = await self._flights.do(
                key, lambda: self._drive(self._miss_flow(name, label, version, key))
            )
        except (TransportError, ServerError) as exc:
            if fallback is None:
                raise
            return self._serve_fallback(key, name, fallback, spare, exc)
        if not rollout_key or found.rollout is None:
            return found
        return found.rollout.pick(found, rollout_key)

    async def preload(self) -> None:
        """As ``PromptClient.preload``."""
        await self._drive(self._preload_flow())

    async def flush_usage(self) -> None:
        """As ``PromptClient.flush_usage``."""
        await self._drive(self._report_flow())

    async def aclose(self) -> None:
        """Stop watching and reporting, send the usage counted since the last send, and
        close pooled connections. The cache and token are kept."""
        if self._watcher is not None:
            await self._watcher.stop()
        if self._reporter is not None and not self._closed:
            await self._reporter.stop()
            await send_at_close(self.flush_usage)
        self._closed = True
        await self._http.aclose()

    close = aclose

    async def __aenter__(self) -> Self:
        return await self.ready()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _drive(self, flow: Flow[T]) -> T:
        step = resume(flow, None)
        while not isinstance(step, Done):
            outcome: object = None
            try:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                elif isinstance(step, NeedToken):
                    outcome = await self._token(step)
                else:
                    outcome = await self._http.send(step)
            except (httpx.RequestError, PromptServiceError) as exc:
                outcome = exc
            step = resume(flow, outcome)
        return step.value

    async def _token(self, need: NeedToken) -> str:
        async with self._token_lock:  # one refresh at a time; the others then find it done
            token = self._auth.current()
            if token is None or token == need.stale:
                token = await self._drive(self._auth.refresh_flow(self._policy, need.deadline))
            return token
