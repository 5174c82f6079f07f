"""``watch=True``: follow the org's change events so a cached version never outlives a
change by more than the time an event takes to arrive.

One stream per client (``GET /api/v1/events``, Server-Sent Events, parsed by httpx-sse):
a thread for ``PromptClient`` (:class:`ThreadWatcher`), a task for
``AsyncPromptClient`` (:class:`TaskWatcher`). Both run the same :class:`Watch`, which
holds the stream's state and does no I/O:

* before its first stream it asks the long poll (``?wait=0``) for the id of the newest
  event, its starting point, and checks what was cached before it (a conditional GET
  each, while the entries go on being served: a change in between has an event the
  stream will not replay); an answer to a call sent before the starting point is asked
  for again by that call (``PromptCache.mark``). So every later change is either in
  the stream or already in what was checked or fetched; every (re)connection then
  sends ``Last-Event-ID`` and the server replays what the client missed;
* an event naming a prompt drops that prompt's entries (by the name and the ``pmt_`` id
  it carries: see ``PromptCache.drop``); ``reset`` (the client was away longer than the
  log keeps) clears the cache;
* the stream ends when its token expires, or on any failure; the next attempt waits
  the reconnect backoff (about 0.1 s, doubling with each failure up to 10 s, back to
  0.1 s after a healthy stream), or the refusal's ``Retry-After`` when that is longer
  (a server at its limit of streams), and uses the client's token provider, so a
  fresh token replaces an expired one; a token the stream refuses is refreshed and
  tried again at once, once.

While no stream is open the cache is only as fresh as ``cache_ttl`` makes it; events
missed meanwhile arrive on reconnection, when they are still in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

from promptsvc.client.cache import CacheEntry, Clock, PromptCache
from promptsvc.client.errors import (
    PromptServiceError,
    error_for_response,
    invalid_response,
    json_or_none,
)
from promptsvc.client.flow import RetryPolicy, request_headers
from promptsvc.client.tasks import LoopTask

logger = logging.getLogger("promptsvc.client")

EVENTS_PATH = "/api/v1/events"
EVENT_STREAM = "text/event-stream"
# The server sends at least a comment every 15 s: silence for three of those means the
# connection is dead (a proxy or NAT dropped it without a word).
READ_TIMEOUT = 45.0
# A stream open this long counts as healthy: the next one starts without backoff.
HEALTHY_SECONDS = 1.0
RECONNECT = RetryPolicy(backoff=0.1, backoff_cap=10.0)
# The most of a refusal's Retry-After that is honoured: longer would leave the cache
# unwatched for longer than anyone asked for.
RETRY_AFTER_CAP = 60.0

ChangeListener = Callable[[dict[str, Any] | None], None]
"""``on_change``: called with each change event's body, or None when the cache was reset."""


class Watch:
    """The stream's state shared by both watchers: where it is in the log, its token
    trouble, and the backoff; and what the answers and events do to the cache."""

    def __init__(
        self,
        base_url: str,
        cache: PromptCache,
        timeout: float,
        *,
        reconnect: RetryPolicy = RECONNECT,
        clock: Clock = time.monotonic,
        on_change: ChangeListener | None = None,
    ) -> None:
        self.url = base_url + EVENTS_PATH
        self.cache = cache
        self.on_change = on_change
        self.timeout = timeout
        self.reconnect = reconnect
        self.clock = clock
        self.last_id: str | None = None
        self.stale: str | None = None  # the token the stream last refused
        self.connected = False
        self._opened_at = 0.0
        self._failures = 0
        self._retry_now = False
        self._retry_after = 0.0  # the last refusal's Retry-After, seconds

    def position_path(self) -> str:
        """The long poll that answers the newest event's id at once."""
        return EVENTS_PATH + "?wait=0"

    def positioned(self, response: httpx.Response) -> dict[str, CacheEntry]:
        """Start from the long poll's ``last_id``; the entries cached before, which the
        caller checks."""
        if response.status_code != 200:
            raise error_for_response(response)
        body = json_or_none(response)
        last_id = body.get("last_id") if isinstance(body, dict) else None
        if not isinstance(last_id, str) or not last_id:
            raise invalid_response(response, "events answer without last_id")
        self.last_id = last_id
        return self.cache.mark()

    def request(self, token: str) -> httpx.Request:
        """The stream's request, resuming after ``last_id``."""
        headers = request_headers(token)
        headers["Accept"] = EVENT_STREAM
        headers["Cache-Control"] = "no-store"
        if self.last_id is not None:
            headers["Last-Event-ID"] = self.last_id
        request = httpx.Request("GET", self.url, headers=headers)
        request.extensions["timeout"] = httpx.Timeout(self.timeout, read=READ_TIMEOUT).as_dict()
        return request

    def opened(self, response: httpx.Response, token: str) -> bool:
        """Whether the stream is open. False: ``token`` was refused and is to be
        refreshed and tried again now. Raises the PromptServiceError of any other
        answer (the body must have been read)."""
        if response.status_code == 401:
            self._retry_now = self.stale is None  # once; then back off
            self.stale = token
            if self._retry_now:
                return False
        if response.status_code != 200:
            self._retry_after = _retry_after(response)
            raise error_for_response(response)
        if response.headers.get("Content-Type", "").partition(";")[0].strip() != EVENT_STREAM:
            raise invalid_response(response, "events answer is not text/event-stream")
        self.stale = None
        self.connected = True
        self._opened_at = self.clock()
        return True

    def apply(self, sse: ServerSentEvent) -> None:
        """Drop what the event makes stale, tell ``on_change``; remember its id."""
        if sse.event == "reset":
            self.cache.clear()
            self._tell(None)
        elif sse.data:  # an empty "message" is a heartbeat comment after an event
            try:
                body = json.loads(sse.data)
            except ValueError:
                logger.warning("events: unreadable event %s: clearing the cache", sse.id)
                body = None
                self.cache.clear()
                self._tell(None)
            if isinstance(body, dict):
                refs = [body.get(field) for field in ("prompt_name", "prompt_id")]
                self.cache.drop(ref for ref in refs if isinstance(ref, str))
                self._tell(body)
        if sse.id:
            self.last_id = sse.id

    def _tell(self, body: dict[str, Any] | None) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(body)
        except Exception:  # the listener's failure must not stop the stream
            logger.exception("events: on_change failed")

    def ended(self) -> float:
        """The stream ended or could not open: seconds to wait before the next try."""
        healthy = self.connected and self.clock() - self._opened_at >= HEALTHY_SECONDS
        self.connected = False
        if self._retry_now:
            self._retry_now = False
            return 0.0
        if healthy:
            self._failures = 0
        delay = max(self.reconnect.delay(self._failures), self._retry_after)
        self._failures += 1
        self._retry_after = 0.0
        return delay


def _retry_after(response: httpx.Response) -> float:
    """The answer's Retry-After in seconds (0 when absent or an HTTP date), capped."""
    value = response.headers.get("Retry-After", "").strip()
    return min(float(value), RETRY_AFTER_CAP) if value.isdigit() else 0.0


def _report(watch: Watch, exc: BaseException | None) -> None:
    if exc is None:
        logger.debug("events: stream ended; reconnecting after %s", watch.last_id)
    elif isinstance(exc, PromptServiceError | httpx.HTTPError):
        logger.warning("events: stream failed, reconnecting: %s", exc)
    else:
        logger.error("events: unexpected failure, reconnecting", exc_info=exc)


def _interrupt(response: httpx.Response) -> None:
    """Wake the thread reading ``response``: shut its socket down. (Closing it from
    another thread would not wake a blocked read.)"""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the raw socket's, even for TLS


class ThreadWatcher:
    """Runs a Watch in a daemon thread over a blocking httpx.Client.

    ``token(stale)`` gives a valid token (a fresh one when ``stale`` is the held one);
    ``position()`` finds the starting point (``Watch.positioned``) and checks what was
    cached before it.
    """

    def __init__(
        self,
        watch: Watch,
        http: httpx.Client,
        token: Callable[[str | None], str],
        position: Callable[[], None],
    ) -> None:
        self.watch = watch
        self._http = http
        self._token = token
        self._position = position
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # pairs the open response with _stopping
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._run, name="promptsvc-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop following; wait up to ``timeout`` seconds for the thread to end."""
        with self._lock:
            self._stopping.set()
            response = self._response
        if response is not None:
            _interrupt(response)
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self._stopping.is_set():
            failure: BaseException | None = None
            try:
                self._follow()
            except Exception as exc:  # a watcher that dies would leave the cache stale
                failure = exc
            if self._stopping.is_set():
                break
            _report(self.watch, failure)
            self._stopping.wait(self.watch.ended())
        self.watch.connected = False

    def _follow(self) -> None:
        if self.watch.last_id is None:
            self._position()
        token = self._token(self.watch.stale)
        response = self._http.send(self.watch.request(token), stream=True)
        try:
            with self._lock:
                if self._stopping.is_set():
                    return
                self._response = response
            if response.status_code != 200:
                response.read()
            if self.watch.opened(response, token):
                for sse in EventSource(response).iter_sse():
                    self.watch.apply(sse)
        finally:
            with self._lock:
                self._response = None
            response.close()


class TaskWatcher(LoopTask):
    """Runs a Watch as an asyncio task over an httpx.AsyncClient; arguments as
    ThreadWatcher's, with ``token`` and ``position`` coroutine functions."""

    name = "promptsvc-watch"

    def __init__(
        self,
        watch: Watch,
        http: httpx.AsyncClient,
        token: Callable[[str | None], Awaitable[str]],
        position: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__()
        self.watch = watch
        self._http = http
        self._token = token
        self._position = position

    async def _run(self) -> None:
        try:
            while True:
                failure: BaseException | None = None
                try:
                    await self._follow()
                except Exception as exc:  # a watcher that dies would leave the cache stale
                    failure = exc
                _report(self.watch, failure)
                await asyncio.sleep(self.watch.ended())
        finally:
            self.watch.connected = False

    async def _follow(self) -> None:
        if self.watch.last_id is None:
            await self._position()
        token = await self._token(self.watch.stale)
        response = await self._http.send(self.watch.request(token), stream=True)
        try:
            if response.status_code != 200:
                await response.aread()
            if self.watch.opened(response, token):
                async for sse in EventSource(response).aiter_sse():
                    self.watch.apply(sse)
        finally:
            await response.aclose()
