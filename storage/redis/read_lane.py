"""The hot read (read_version.lua) sent over redis-py connections of its own.

Why: GET production/latest/version is one EVALSHA, and redis-py's client layer around
that command (pool checkout and release under a lock, command-name lookups, metrics
hooks, the retry wrapper) costs the calling process about as much CPU as the round trip
itself. On the read path every LLM call waits on, that difference decides whether the
API keeps up with a bare Flask endpoint.

So the read goes through :class:`ReadLane`: a stack of idle connections made exactly as
the client's pool makes them (same host, db, credentials, TLS, timeouts and parser),
taken and given back with ``list.pop``/``list.append`` (atomic under the GIL, so no lock).
A lane holds as many connections as there have been concurrent reads in the process (at
most the worker's threads), on top of the client's pool.

Failure handling mirrors redis-py's, for a read-only script:

- A connection the server closed while it sat idle (Redis restarted, ``timeout`` in
  redis.conf, CLIENT KILL) fails on first use with ``ConnectionError``; the read is sent
  once more on a new connection. Unlike a changing script (storage/redis/core.py, NO_RETRY),
  a read can be sent twice without harm.
- NOSCRIPT (a restarted or flushed server): the script is loaded on that server through
  the client and the read sent again on the same connection.
- Any other failure drops the connection (it may still have a reply in flight) and
  propagates; storage/redis/core.py turns outages into ``StorageUnavailable``.

On Redis Cluster (storage/redis/cluster.py) there is one lane per primary, to the node
redis-py's slot map names for the org's slot; anything that calls for the cluster
client's routing (MOVED, a node down) sends the read through that client instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError


class ReadLane:
    """Runs one read-only script with EVALSHA on the lane's own connections."""

    def __init__(self, client: redis.Redis, script: Script) -> None:
        """Read with ``script`` (its sha and source) on the server ``client`` talks to."""
        self.client = client
        pool = client.connection_pool
        self._connection_class = pool.connection_class
        self._connection_kwargs = pool.connection_kwargs
        self._script = script
        self._idle: list[Any] = []
        self._pid = os.getpid()

    def __call__(self, keys: Sequence[str], args: Sequence[str]) -> Any:
        if self._pid != os.getpid():
            # A forked child must not talk on its parent's sockets; they stay open for
            # the parent (closing them here would shut them down for it too).
            self._idle = []
            self._pid = os.getpid()
        try:
            connection, reused = self._idle.pop(), True
        except IndexError:
            connection, reused = self._new_connection(), False
        command = connection.pack_command("EVALSHA", self._script.sha, len(keys), *keys, *args)
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
            self._idle.append(connection)  # the server answered: the connection is fine
            raise
        except BaseException:
            connection.disconnect()
            raise
        self._idle.append(connection)
        return reply

    def many(self, keys: Sequence[str], calls: Sequence[Sequence[str]]) -> list[Any]:
        """The replies of one read per ``calls`` (its args), all on ``keys``, sent at
        once on one connection: one round trip. Should any fail, each is sent alone
        (which reloads a missing script and retries a stale connection)."""
        if self._pid != os.getpid() or len(calls) < 2:
            return [self(keys, args) for args in calls]
        try:
            connection = self._idle.pop()
        except IndexError:
            connection = self._new_connection()
        sha = self._script.sha
        packed = connection.pack_commands(
            [("EVALSHA", sha, len(keys), *keys, *args) for args in calls]
        )
        replies: list[Any] = []
        try:
            connection.send_packed_command(packed, check_health=False)
            for _ in calls:
                try:
                    replies.append(connection.read_response())
                except redis.ResponseError:
                    replies.append(None)  # the server answered: read on
        except redis.ConnectionError:
            connection.disconnect()
            return [self(keys, args) for args in calls]
        except BaseException:
            connection.disconnect()
            raise
        self._idle.append(connection)
        if any(reply is None for reply in replies):
            return [self(keys, args) for args in calls]
        return replies

    def _new_connection(self) -> Any:
        return self._connection_class(**self._connection_kwargs)

    def _send(self, connection: Any, command: Any) -> Any:
        connection.send_packed_command(command, check_health=False)
        try:
            return connection.read_response()
        except NoScriptError:
            self.client.script_load(self._script.script)
            connection.send_packed_command(command, check_health=False)
            return connection.read_response()

    def close(self) -> None:
        """Close the idle connections (a later read opens new ones, as redis-py's pool
        does after ``close()``)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.disconnect()
