"""A reader of GET /api/v1/events that reconnects with Last-Event-ID, as a client would.

It reads in a thread of its own through httpx-sse, keeps every frame with the time it
arrived, and when its stream ends or fails it connects again after a short pause, with
the id of the last frame it received; each answer's status is kept, so a test can see
the 503s of an outage and the reconnection after it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from httpx_sse import connect_sse

RETRY_PAUSE = 0.2


@dataclass(frozen=True)
class Received:
    at: float  # time.time() when the frame arrived
    id: str
    event: str
    data: str


class SseReader:
    """Follows ``base_url``'s event stream with tokens from ``token()``."""

    def __init__(
        self,
        base_url: str,
        token: Callable[[], str],
        socket_options: list[tuple[int, int, int]] | None = None,
    ) -> None:
        self.base_url = base_url
        self.token = token
        self.socket_options = socket_options
        self.received: list[Received] = []
        self.statuses: list[int] = []
        self.ended: list[float] = []  # when each stream ended or failed
        self.last_id: str | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._socket: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SseReader:
        self._thread.start()
        return self

    def wait_connected(self, connections: int = 1, timeout: float = 30.0) -> None:
        """Until ``connections`` streams have been answered 200."""
        self._wait(lambda: self.statuses.count(200) >= connections, timeout, "connected")

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """Until ``count`` frames arrived; the frames."""
        self._wait(lambda: len(self.received) >= count, timeout, f"{count} frames")
        with self._lock:
            return list(self.received)

    def drop(self) -> None:
        """Cut the current connection, as a network failure would; it reconnects."""
        sock = self._socket
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self._stopped.set()
        self.drop()
        self._thread.join(10)

    def _wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"not {what} in {timeout} s: statuses {self.statuses}, "
                    f"{len(self.received)} frames"
                )
            time.sleep(0.01)  # another thread's progress

    def _run(self) -> None:
        while not self._stopped.is_set():
            headers = {"Authorization": f"Bearer {self.token()}"}
            if self.last_id is not None:
                headers["Last-Event-ID"] = self.last_id
            transport = httpx.HTTPTransport(socket_options=self.socket_options)
            client = httpx.Client(
                base_url=self.base_url, timeout=httpx.Timeout(5.0, read=60.0), transport=transport
            )
            try:
                with connect_sse(client, "GET", "/api/v1/events", headers=headers) as source:
                    self._socket = source.response.extensions["network_stream"].get_extra_info(
                        "socket"
                    )
                    self.statuses.append(source.response.status_code)
                    if source.response.status_code == 200:
                        for sse in source.iter_sse():
                            with self._lock:
                                self.received.append(
                                    Received(time.time(), sse.id, sse.event, sse.data)
                                )
                            self.last_id = sse.id
            except (httpx.HTTPError, RuntimeError):
                pass  # a dropped connection, a server gone: connect again
            finally:
                self._socket = None
                client.close()
                self.ended.append(time.time())
            self._stopped.wait(RETRY_PAUSE)
