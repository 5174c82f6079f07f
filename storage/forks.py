"""Whether this process is a fork of the one that made a per-process resource, without
a system call per use; and the read lanes' idle connections, which a fork leaves behind.

The read lanes (storage/redis/read_lane.py, storage/sql/read_lane.py) must not use the
connections a forked child inherits from its parent. ``os.getpid()`` on every read is a
system call, about a microsecond on a virtual machine; :func:`generation` is a counter
that ``os.fork`` (gunicorn's, multiprocessing's) moves on in the child, so it differs
from the value a resource was made under exactly when the process is another one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Generic, TypeVar

C = TypeVar("C")

_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_forked)


def generation() -> int:
    """Changes in a forked child (and its children), never in the same process."""
    return _forks


class Idle(Generic[C]):
    """A read lane's idle connections in this process, taken and given back with
    ``list.pop``/``append`` (atomic under the GIL: no lock). A forked child starts with
    none: it must not talk on its parent's sockets, and they stay open for the parent
    (closing them here would shut them down for it too)."""

    def __init__(self, new: Callable[[], C]) -> None:
        self.new = new
        self.connections: list[C] = []
        self._generation = generation()

    def take(self) -> tuple[C, bool]:
        """An idle connection and True, else a new one and False."""
        if self._generation != generation():
            self.connections = []
            self._generation = generation()
        try:
            return self.connections.pop(), True
        except IndexError:
            return self.new(), False

    def give(self, connection: C) -> None:
        self.connections.append(connection)

    def drain(self) -> list[C]:
        """The idle connections, which the caller closes; none are left."""
        idle, self.connections = self.connections, []
        return idle
