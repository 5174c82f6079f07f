"""Whether a SQLite database may have changed since a moment, told without a system
call: from the header of its WAL index, which every connection to the database, in any
process, shares as memory (the ``-shm`` file beside it, mapped here read-only).

Why: on a busy worker every call into SQLite lets go of the GIL, and each can hand it to
another thread and cost a context switch, several times what the read itself costs
(docs/benchmarks.md, "http"). SQLite decides whether its own page cache is still good
the same way, from this header, at the start of every read.

The WAL index (https://www.sqlite.org/walformat.html, "The WAL-Index Header") begins
with two copies of a 48-byte header that every commit rewrites (a change counter, the
WAL's last frame, its salts and checksums), the second copy first and the first last,
before the commit returns; restarting the WAL changes the salts. So while both copies
are equal, and equal to what they were before a read began, no commit has ended since
that read began. While a commit is rewriting them the copies differ, and
:meth:`WalWatch.state` answers None: read the database.

SQLite deletes the shared-memory file when the last connection to the database closes.
The watch keeps a connection of its own open, made in this process: in WAL mode a
connection holds a shared lock on the database for as long as it is open, so no other
connection can be the last one while the mapping is in use.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sqlite3
import struct
import threading
from collections.abc import Callable

from storage import forks

HEADER = 48  # bytes of one copy of the header
# The header's first field: the WAL index format (native byte order); its isInit byte.
_VERSION = struct.pack("=I", 3007000)
_IS_INIT = 12


class WalWatch:
    """The WAL index header of one SQLite database, read from shared memory."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        """Watch the database ``connect`` opens (a new connection in WAL mode)."""
        self._connect = connect
        self._view: mmap.mmap | None = None
        self._pin: sqlite3.Connection | None = None
        self._generation = -1
        self._opening = threading.Lock()
        # A forked child's copies of its parent's connection and mapping.
        self._inherited: list[tuple[sqlite3.Connection, mmap.mmap | None]] = []

    def state(self) -> bytes | None:
        """Both copies of the header now; equal bytes later mean no commit ended in
        between. None when they cannot tell: a commit is under way, or the database
        is not in WAL mode."""
        if self._generation != forks.generation():
            with self._opening:
                if self._generation != forks.generation():
                    self._open()
        view = self._view
        if view is None:
            return None
        header = view[: 2 * HEADER]
        if header[:HEADER] != header[HEADER:] or not header[_IS_INIT]:
            return None
        return header

    def _open(self) -> None:
        """Map the WAL index of this process's own connection (a forked child makes its
        own: it holds none of its parent's locks, and keeps the parent's connection
        and mapping unused but open, since closing a connection made before the fork
        may act on the database for the parent)."""
        if self._pin is not None:
            self._inherited.append((self._pin, self._view))
        self._view = self._pin = None
        try:
            pin = self._connect()
        except Exception:  # the read that follows says why; tried again on the next
            return
        try:
            (mode,) = pin.execute("PRAGMA journal_mode").fetchone()
            # A read: the WAL index exists, is mapped by SQLite and is initialized.
            pin.execute("SELECT count(*) FROM sqlite_master").fetchone()
            path = pin.execute("PRAGMA database_list").fetchone()[2]
            view = None
            if mode.lower() == "wal" and path:
                fd = os.open(f"{path}-shm", os.O_RDONLY)
                try:
                    view = mmap.mmap(fd, 2 * HEADER, access=mmap.ACCESS_READ)
                finally:
                    os.close(fd)
        except (OSError, ValueError, sqlite3.Error):
            view = None
        if view is not None and view[: len(_VERSION)] == _VERSION:
            self._pin, self._view = pin, view
        else:  # not in WAL mode, or a format this module does not know
            if view is not None:
                view.close()
            with contextlib.suppress(sqlite3.Error):
                pin.close()
        self._generation = forks.generation()

    def close(self) -> None:
        if self._generation == forks.generation():
            if self._view is not None:
                self._view.close()
            if self._pin is not None:
                self._pin.close()
        self._view = self._pin = None
        self._generation = -1
