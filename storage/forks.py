"""Whether this process is a fork of the one that made a per-process resource, without
a system call per use.

The read lanes (storage/redis/read_lane.py, storage/sql/read_lane.py) must not use the
connections a forked child inherits from its parent. ``os.getpid()`` on every read is a
system call, about a microsecond on a virtual machine; :func:`generation` is a counter
that ``os.fork`` (gunicorn's, multiprocessing's) moves on in the child, so it differs
from the value a resource was made under exactly when the process is another one.
"""

from __future__ import annotations

import os

_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_forked)


def generation() -> int:
    """Changes in a forked child (and its children), never in the same process."""
    return _forks
