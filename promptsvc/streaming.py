"""Long answers served by one asyncio loop per process instead of a thread each.

An event stream (``GET /api/v1/events``) stays open for minutes and a long poll for up
to 30 s, while doing nothing most of the time. Held by the WSGI server, each would keep
one of its threads (gunicorn's gthread worker, werkzeug's threaded server) for that
long: ten thousand watchers would be ten thousand threads. Instead the view answers
with a :class:`HandoffResponse`. When the server starts sending it, the response takes
the client's connection away from the server and gives it to this process's
:class:`StreamLoop`, a daemon thread running an asyncio loop, where a coroutine per
answer writes it (an open stream then costs a coroutine and a socket, a few KiB; an
event stream that is up to date is written by its org's channel with every other one,
promptsvc.event_streams, and its coroutine only waits for the end).

Taking the connection (:func:`detach`) keeps a duplicate of the socket's descriptor
for the loop and puts a dead socket in the server's place: the server's own writes
(the headers it would send, the end of an empty body) fail as on a client that left
(``EPIPE``), which gunicorn and werkzeug treat quietly by closing their side; the
client's connection, held by the duplicate, stays open. The response writes its
status line and headers itself, as the application made them, chunked on HTTP/1.1.

Where a connection cannot be taken (no plain socket in the WSGI environ: TLS in the
WSGI server, the test client, another server; or ``EVENTS_ASYNC`` off in the app's
config), the same response is an ordinary WSGI body served by the request's thread, as
before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator
from typing import Any

from flask import Response

log = logging.getLogger(__name__)

# Where WSGI servers put the client's socket in the environ.
SOCKET_KEYS = ("gunicorn.socket", "werkzeug.socket")
# A client that has not read this much of what was written to it is not reading: the
# loop drops its connection rather than hold an ever larger buffer for it.
MAX_UNSENT = 1 << 20

Serve = Callable[["Connection"], Coroutine[Any, Any, None]]


class Payload:
    """Bytes written to many connections at once: chunk-framed once for every chunked
    connection, not once per connection."""

    __slots__ = ("chunked", "plain")

    def __init__(self, data: bytes) -> None:
        self.plain = data
        self.chunked = b"%x\r\n%s\r\n" % (len(data), data)


class Connection(asyncio.Protocol):
    """A client connection the loop holds: :meth:`send` writes (chunked when the
    answer is), :meth:`end` finishes the answer and closes. When the client closes its
    side (or the connection breaks), the task serving it is cancelled at once, which
    frees whatever it holds."""

    def __init__(self, chunked: bool) -> None:
        self.chunked = chunked
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        pass  # these clients send nothing after their request

    def eof_received(self) -> bool:
        return False  # the client left: close our side too (connection_lost follows)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def send(self, data: bytes | Payload) -> None:
        """Write ``data`` as (part of) the answer's body."""
        transport = self.transport
        if self.closed or transport is None or not data:
            return
        if isinstance(data, Payload):
            data = data.chunked if self.chunked else data.plain
        elif self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        transport.write(data)
        if transport.get_write_buffer_size() > MAX_UNSENT:
            log.info("dropping a client that does not read what it asked for")
            transport.abort()

    def end(self) -> None:
        """Finish the answer and close the connection once it is written."""
        transport = self.transport
        if self.closed or transport is None:
            return
        if self.chunked:
            transport.write(b"0\r\n\r\n")
        self.closed = True
        transport.close()


class StreamLoop:
    """An asyncio loop in a daemon thread of its own, serving taken connections."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._run, name="event-streams", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def serve(self, sock: socket.socket, head: bytes, chunked: bool, serve: Serve) -> None:
        """Write ``head`` to ``sock`` then run ``serve`` on the connection, in the loop.
        Called from any thread; the loop owns ``sock`` from here on."""
        asyncio.run_coroutine_threadsafe(self._serve(sock, head, chunked, serve), self.loop)

    async def _serve(self, sock: socket.socket, head: bytes, chunked: bool, serve: Serve) -> None:
        task = asyncio.current_task()
        try:
            _, connection = await self.loop.connect_accepted_socket(
                lambda: Connection(chunked), sock
            )
        except OSError:
            sock.close()
            await serve(_gone(chunked))  # still runs, so that it frees what it holds
            return
        connection.task = task
        assert connection.transport is not None
        connection.transport.write(head)
        try:
            await serve(connection)
        except asyncio.CancelledError:
            pass  # the client left
        except Exception:
            log.exception("a handed-off answer failed")
        finally:
            if connection.transport is not None and not connection.transport.is_closing():
                connection.end()


def _gone(chunked: bool) -> Connection:
    connection = Connection(chunked)
    connection.closed = True
    return connection


_LOOP: StreamLoop | None = None
_LOOP_LOCK = threading.Lock()
_DEAD: socket.socket | None = None


def stream_loop() -> StreamLoop:
    """This process's loop, started on first use (again in a forked child)."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.pid != os.getpid():
            _LOOP = StreamLoop()
        return _LOOP


def _dead_socket() -> socket.socket:
    """A socket whose writes fail with EPIPE: one end of a pair whose other end is
    closed. The same one stands in for every taken connection."""
    global _DEAD
    with _LOOP_LOCK:
        if _DEAD is None:
            _DEAD, other = socket.socketpair()
            other.close()
        return _DEAD


def detach(environ: dict[str, Any]) -> socket.socket | None:
    """Take the request's client connection from the WSGI server (None where it cannot
    be taken): the returned socket is the loop's, the server's own now writes nowhere."""
    sock = next((environ[key] for key in SOCKET_KEYS if key in environ), None)
    if type(sock) is not socket.socket:  # TLS (ssl.SSLSocket) or none at all
        return None
    fd = sock.fileno()
    if fd < 0:
        return None
    try:
        mine = socket.socket(fileno=os.dup(fd))
    except OSError:
        return None  # out of descriptors: the request's thread serves it
    os.dup2(_dead_socket().fileno(), fd)
    mine.setblocking(False)
    return mine


class HandoffResponse(Response):
    """A response that the stream loop serves: ``serve`` writes its body on the loop.
    Where the connection cannot be taken, the ``response`` iterable given (its threaded
    form) is the body, and ``release`` (if given) runs when the server closes it without
    having started it, so that what the answer holds is freed in every case."""

    def __init__(
        self,
        response: Iterable[bytes],
        *,
        serve: Serve,
        release: Callable[[], None] | None = None,
        enabled: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(response, **kwargs)
        self.serve = serve
        self.release = release
        self.enabled = enabled

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        app_iter, status, headers = self.get_wsgi_response(environ)
        start_response(status, headers)
        if environ.get("REQUEST_METHOD") == "HEAD" or not self.enabled:
            return _Released(app_iter, self.release)
        return _Handoff(environ, status, headers, app_iter, self.serve, self.release)


class _Released:
    """A body that runs ``release`` when the server closes it."""

    def __init__(self, body: Iterable[bytes], release: Callable[[], None] | None) -> None:
        self.body = body
        self.release = release

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            if self.release is not None:
                self.release()


class _Handoff(_Released):
    """The body of a HandoffResponse: on first iteration it takes the connection and
    gives it to the loop (then it is empty), else it is the threaded body."""

    def __init__(
        self,
        environ: dict[str, Any],
        status: str,
        headers: list[tuple[str, str]],
        body: Iterable[bytes],
        serve: Serve,
        release: Callable[[], None] | None,
    ) -> None:
        super().__init__(body, release)
        self.environ = environ
        self.status = status
        self.headers = headers
        self.serve = serve
        self.handed = False

    def __iter__(self) -> Iterator[bytes]:
        protocol = self.environ.get("SERVER_PROTOCOL")
        # HTTP/1.x only: an HTTP/2 stream's socket is the whole connection's.
        sock = detach(self.environ) if protocol in ("HTTP/1.0", "HTTP/1.1") else None
        if sock is None:
            return iter(self.body)
        self.handed = True
        chunked = protocol == "HTTP/1.1"
        lines = [f"HTTP/1.1 {self.status}"]
        lines += [f"{name}: {value}" for name, value in self.headers]
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        # The loop closes the connection after the answer: the client must not reuse it.
        lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        stream_loop().serve(sock, head, chunked, self.serve)
        return iter(())

    def close(self) -> None:
        if not self.handed:
            super().close()
