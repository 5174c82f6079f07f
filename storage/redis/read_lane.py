"""The hot read (read_version.lua) sent over redis-py connections of its own.

Why: redis-py's client layer around one EVALSHA (pool checkout under a lock, command
lookups, hooks, the retry wrapper) costs the process about as much CPU as the round
trip, on the read every LLM call waits on. A :class:`ReadLane` keeps idle connections
made as the client's pool makes them, taken and given back with ``list.pop``/``append``
(atomic under the GIL: no lock), as many as there have been concurrent reads.

Replies are read off the socket here, parsed by hiredis as redis-py would (errors are
redis-py's exception classes). A plain TCP or Unix socket is put in blocking mode with
the socket timeout kept by the kernel (SO_RCVTIMEO, SO_SNDTIMEO): with a timeout of
its own, Python polls before every send and receive, two more system calls per read,
each letting go of the GIL (which costs a context switch on a busy worker). A TLS
socket keeps redis-py's timeout and reads.

Failures as redis-py handles them for a read-only script: a connection the server
closed while idle is tried once more on a new one (a read may be sent twice, unlike a
change: core.py NO_RETRY); NOSCRIPT loads the script and sends again; anything else
drops the connection and propagates. On Redis Cluster there is one lane per primary
(storage/redis/cluster.py), and anything needing the cluster client's routing goes
through it.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from typing import Any

import hiredis
import redis
from redis._parsers.base import BaseParser
from redis.commands.core import Script
from redis.exceptions import InvalidResponse, NoScriptError, ResponseError

from storage import forks

# What hiredis answers while a reply is incomplete (a reply is never this object).
_MORE = object()
_RECEIVE = 64 * 1024


def _evalsha(sha: str, keys: Sequence[str], args: Sequence[str]) -> bytes:
    """EVALSHA of ``sha`` on ``keys`` with ``args``, packed (in C, by hiredis)."""
    command: Any = ("EVALSHA", sha, len(keys), *keys, *args)  # the stub's type is too narrow
    return hiredis.pack_command(command)


class _Wire:
    """One lane connection: connected, set up (AUTH, SELECT, a client name) and written
    to by redis-py, its replies read here."""

    def __init__(self, connection: Any) -> None:
        connection.connect()
        self.connection = connection
        encoder = connection.encoder
        self._reader = hiredis.Reader(
            protocolError=InvalidResponse,
            replyError=BaseParser.parse_error,
            encoding=encoder.encoding if encoder.decode_responses else None,
            errors=encoder.encoding_errors,
            notEnoughData=_MORE,
        )
        sock = connection._sock
        self._sock: socket.socket | None = None
        if type(sock) is socket.socket:  # not TLS: see the module docstring
            timeout = connection.socket_timeout
            sock.settimeout(None)
            if timeout:
                seconds = int(timeout)
                limit = struct.pack("ll", seconds, int((timeout - seconds) * 1e6) or 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, limit)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, limit)
            self._sock = sock

    def send(self, command: bytes) -> None:
        self.connection.send_packed_command([command], check_health=False)

    def read(self) -> Any:
        """The next reply; a Redis error reply is raised, as redis-py raises it."""
        sock = self._sock
        if sock is None:
            return self.connection.read_response()
        reply = self._reader.gets()
        while reply is _MORE:
            try:
                data = sock.recv(_RECEIVE)
            except BlockingIOError:  # SO_RCVTIMEO ran out
                raise redis.TimeoutError("Timeout reading from socket") from None
            except OSError as exc:
                raise redis.ConnectionError(f"Error while reading from socket: {exc}") from None
            if not data:
                raise redis.ConnectionError("Connection closed by server.")
            self._reader.feed(data)
            reply = self._reader.gets()
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    def disconnect(self) -> None:
        self.connection.disconnect()


class ReadLane:
    """Runs one read-only script with EVALSHA on the lane's own connections."""

    def __init__(self, client: redis.Redis, script: Script) -> None:
        """Read with ``script`` (its sha and source) on the server ``client`` talks to."""
        self.client = client
        pool = client.connection_pool
        self._connection_class = pool.connection_class
        self._connection_kwargs = pool.connection_kwargs
        self._script = script
        self._idle: forks.Idle[_Wire] = forks.Idle(self._new_connection)

    def __call__(self, keys: Sequence[str], args: Sequence[str]) -> Any:
        connection, reused = self._idle.take()
        command = _evalsha(self._script.sha, keys, args)
        try:
            try:
                reply = self._send(connection, command)
            except redis.ConnectionError:
                if not reused:
                    raise
                connection.disconnect()  # closed by the server while idle: once more
                connection = self._new_connection()
                reply = self._send(connection, command)
        except redis.ResponseError:
            self._idle.give(connection)  # the server answered: the connection is fine
            raise
        except BaseException:
            connection.disconnect()
            raise
        self._idle.give(connection)
        return reply

    def many(self, keys: Sequence[str], calls: Sequence[Sequence[str]]) -> list[Any]:
        """The replies of one read per ``calls`` (its args), all on ``keys``, sent at
        once on one connection: one round trip. Should any fail, each is sent alone
        (which reloads a missing script and retries a stale connection)."""
        if len(calls) < 2:
            return [self(keys, args) for args in calls]
        connection, _ = self._idle.take()
        sha = self._script.sha
        packed = b"".join(_evalsha(sha, keys, args) for args in calls)
        replies: list[Any] = []
        try:
            connection.send(packed)
            for _ in calls:
                try:
                    replies.append(connection.read())
                except redis.ResponseError:
                    replies.append(None)  # the server answered: read on
        except redis.ConnectionError:
            connection.disconnect()
            return [self(keys, args) for args in calls]
        except BaseException:
            connection.disconnect()
            raise
        self._idle.give(connection)
        if any(reply is None for reply in replies):
            return [self(keys, args) for args in calls]
        return replies

    def _new_connection(self) -> _Wire:
        return _Wire(self._connection_class(**self._connection_kwargs))

    def _send(self, connection: _Wire, command: Any) -> Any:
        connection.send(command)
        try:
            return connection.read()
        except NoScriptError:
            self.client.script_load(self._script.script)
            connection.send(command)
            return connection.read()

    def close(self) -> None:
        """Close the idle connections (a later read opens new ones, as redis-py's pool
        does after ``close()``)."""
        for connection in self._idle.drain():
            connection.disconnect()
