"""The hot read (read_version.lua) sent over redis-py connections of its own.

Why: redis-py's client layer around one EVALSHA (pool checkout under a lock, command
lookups, hooks, the retry wrapper) costs the process about as much CPU as the round
trip, on the read every LLM call waits on. A :class:`ReadLane` keeps idle connections
made as the client's pool makes them, taken and given back with ``list.pop``/``append``
(atomic under the GIL: no lock), as many as there have been concurrent reads.

Failures as redis-py handles them for a read-only script: a connection the server
closed while idle is tried once more on a new one (a read may be sent twice, unlike a
change: core.py NO_RETRY); NOSCRIPT loads the script and sends again; anything else
drops the connection and propagates. On Redis Cluster there is one lane per primary
(storage/redis/cluster.py), and anything needing the cluster client's routing goes
through it.
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
