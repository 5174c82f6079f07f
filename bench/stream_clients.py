"""The client side of ``bench.streams``: many open event streams, held by a few processes.

Each client process holds its share of the streams as raw HTTP/1.1 connections on
loopback, in one ``epoll`` loop of its own that reads every socket as soon as it is
readable (and its command pipe in the same loop). A promotion's frame is noted twice
per stream:

* **arrived**: when the kernel put the bytes in the client's socket (``SO_TIMESTAMPNS``,
  the receive timestamp of the segment). On loopback the server's ``send`` delivers at
  once, so this is when the server wrote the frame, whatever the client processes do;
* **read**: when the client process's ``epoll_wait`` returned with that socket readable,
  which adds the client processes' own delay (on a loaded machine, their wait for a
  core).

Both are ``time.time()`` clocks, one for every process of the machine.
"""

from __future__ import annotations

import multiprocessing
import re
import select
import socket
import struct
import time
from multiprocessing.connection import Connection
from typing import Any

EVENTS = "/api/v1/events"
OPEN_TIMEOUT = 120.0
# Not in every Python's socket module; its value on Linux.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TIMESTAMP_SPACE = socket.CMSG_SPACE(16)
_VERSION = re.compile(rb"event: version\.promoted\ndata: \{[^\n]*?\"version\":(\d+)")

Delivery = tuple[float, float]  # (arrived, read), epoch seconds


class Holder:
    """``count`` open event streams, spread over ``processes`` client processes.
    :meth:`wait_for` gives, for a promoted version number, each stream's
    :data:`Delivery` of its frame."""

    def __init__(self, port: int, token: str, count: int, processes: int) -> None:
        self.count = count
        context = multiprocessing.get_context("spawn")
        shares = [count // processes + (i < count % processes) for i in range(processes)]
        self._pipes = []
        self._processes = []
        for share in shares:
            ours, theirs = context.Pipe()
            process = context.Process(target=hold, args=(theirs, port, token, share))
            process.start()
            self._pipes.append(ours)
            self._processes.append(process)

    def _ask(self, *command: object, timeout: float) -> list[Any]:
        for pipe in self._pipes:
            pipe.send(command)
        answers = []
        for pipe in self._pipes:
            if not pipe.poll(timeout):
                raise SystemExit(f"a client process did not answer {command[0]!r}")
            answers.append(pipe.recv())
        return answers

    def open(self) -> None:
        """Open every stream; returns when all answered (the server holds them then)."""
        failures = [f for answer in self._ask("open", timeout=OPEN_TIMEOUT) for f in answer]
        if failures:
            raise SystemExit(f"{len(failures)} streams failed, first: {failures[0]}")

    def still_open(self) -> int:
        return sum(self._ask("open?", timeout=10))

    def wait_for(self, version: int, timeout: float) -> list[Delivery]:
        answers = self._ask("wait", version, timeout, timeout=timeout + 10)
        times = [t for answer in answers for t in answer]
        if len(times) < self.count:
            raise SystemExit(f"version {version} reached {len(times)} of {self.count} streams")
        return times

    def close(self) -> None:
        self._ask("close", timeout=60)
        for process in self._processes:
            process.join(10)


def hold(pipe: Connection, port: int, token: str, count: int) -> None:
    """A client process: ``count`` streams, driven by commands on ``pipe``."""
    request = (
        f"GET {EVENTS} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()
    streams: dict[int, socket.socket] = {}
    rest: dict[int, bytes] = {}  # per stream, what may be the start of a frame cut in two
    seen: dict[int, list[Delivery]] = {}
    poller = select.epoll()
    poller.register(pipe.fileno(), select.EPOLLIN)
    waiting: tuple[int, float] | None = None  # (version, deadline) of a "wait"
    while True:
        timeout = -1.0 if waiting is None else max(0.0, waiting[1] - time.monotonic())
        ready = poller.poll(timeout)
        read_at = time.time()
        for fd, _ in ready:
            if fd != pipe.fileno():
                _read(streams, rest, seen, fd, read_at)
                continue
            command = pipe.recv()
            if command[0] == "open":
                pipe.send(_open(streams, poller, port, request, count))
            elif command[0] == "open?":
                pipe.send(len(streams))
            elif command[0] == "wait":
                waiting = (command[1], time.monotonic() + command[2])
            elif command[0] == "close":
                for sock in streams.values():
                    sock.close()
                pipe.send(None)
                return
        if waiting is not None and (
            len(seen.get(waiting[0], [])) >= count or time.monotonic() >= waiting[1]
        ):
            pipe.send(seen.get(waiting[0], []))
            waiting = None


def _open(
    streams: dict[int, socket.socket],
    poller: select.epoll,
    port: int,
    request: bytes,
    count: int,
) -> list[str]:
    """Open ``count`` streams, 50 at a time; the failures, described."""
    failures: list[str] = []
    for start in range(0, count, 50):
        batch: list[socket.socket] = []
        for _ in range(min(50, count - start)):
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=OPEN_TIMEOUT)
                sock.sendall(request)
            except OSError as exc:
                failures.append(repr(exc))
                continue
            batch.append(sock)
        for sock in batch:
            head = b""
            try:
                while b"\r\n\r\n" not in head:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    head += chunk
            except OSError as exc:
                head = repr(exc).encode()
            status = head.split(b"\r\n", 1)[0].decode(errors="replace")
            if " 200 " not in status:
                failures.append(status or "connection closed")
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            streams[sock.fileno()] = sock
            poller.register(sock.fileno(), select.EPOLLIN)
    return failures


def _read(
    streams: dict[int, socket.socket],
    rest: dict[int, bytes],
    seen: dict[int, list[Delivery]],
    fd: int,
    read_at: float,
) -> None:
    sock = streams.get(fd)
    if sock is None:
        return
    try:
        data, ancillary, _, _ = sock.recvmsg(65536, TIMESTAMP_SPACE)
    except BlockingIOError:
        return
    except OSError:
        data, ancillary = b"", []
    if not data:  # the server closed the stream
        del streams[fd]
        sock.close()
        return
    arrived = read_at
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = struct.unpack("qq", value[:16])
            arrived = seconds + nanoseconds / 1e9
    data = rest.pop(fd, b"") + data
    end = data.rfind(b"\n\n") + 2  # whole frames up to here (0: none)
    if end < len(data):
        rest[fd] = data[end:]
    for match in _VERSION.finditer(data, 0, end):
        seen.setdefault(int(match.group(1)), []).append((arrived, read_at))
