"""WalWatch (storage/sql/wal_watch.py): the WAL index header of a SQLite database, read
from shared memory, changes with every commit of any connection in any process, and
only then."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from storage.sql.wal_watch import HEADER, WalWatch


def opener(path: Path, journal_mode: str = "wal") -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.execute(f"PRAGMA journal_mode = {journal_mode}")
        return connection

    return connect


@pytest.fixture
def database(tmp_path: Path) -> Iterator[tuple[Path, sqlite3.Connection]]:
    path = tmp_path / "watched.db"
    writer = opener(path)()
    writer.execute("CREATE TABLE t (n INTEGER)")
    yield path, writer
    writer.close()


@pytest.fixture
def watch(database: tuple[Path, sqlite3.Connection]) -> Iterator[WalWatch]:
    watched = WalWatch(opener(database[0]))
    yield watched
    watched.close()


def test_the_header_changes_with_each_commit_and_only_then(
    database: tuple[Path, sqlite3.Connection], watch: WalWatch
) -> None:
    path, writer = database
    before = watch.state()
    assert before is not None and len(before) == 2 * HEADER
    reader = opener(path)()
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (0,)
    reader.close()
    assert watch.state() == before  # reads change nothing
    writer.execute("INSERT INTO t VALUES (1)")
    after = watch.state()
    assert after is not None and after != before
    writer.execute("BEGIN")
    writer.execute("INSERT INTO t VALUES (2)")
    writer.execute("ROLLBACK")
    assert watch.state() == after  # nothing committed


def test_a_commit_in_another_process_changes_it(
    database: tuple[Path, sqlite3.Connection], watch: WalWatch
) -> None:
    path, _ = database
    before = watch.state()
    insert = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
        "c.execute('INSERT INTO t VALUES (7)')"
    )
    subprocess.run([sys.executable, "-c", insert, str(path)], check=True, timeout=60)
    assert watch.state() not in (None, before)


def test_a_restarted_wal_changes_it(
    database: tuple[Path, sqlite3.Connection], watch: WalWatch
) -> None:
    """After a checkpoint the next commit writes the WAL from its start again: the same
    last frame as some earlier state, told apart by the WAL's new salts."""
    _, writer = database
    writer.execute("INSERT INTO t VALUES (1)")
    seen = {watch.state()}
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for n in range(3):
        writer.execute("INSERT INTO t VALUES (?)", (n,))
        state = watch.state()
        assert state is not None and state not in seen
        seen.add(state)


def test_the_shared_memory_outlives_every_other_connection(
    database: tuple[Path, sqlite3.Connection], watch: WalWatch
) -> None:
    """Closing the last other connection would delete the -shm file and the next one
    make a new file, which an old mapping would not see; the watch's own connection
    keeps it."""
    path, writer = database
    before = watch.state()
    writer.close()
    assert Path(f"{path}-shm").exists()
    again = opener(path)()
    again.execute("INSERT INTO t VALUES (1)")
    again.close()
    assert watch.state() not in (None, before)


def test_a_database_not_in_wal_mode_is_not_watched(tmp_path: Path) -> None:
    path = tmp_path / "rollback-journal.db"
    writer = opener(path, "delete")()
    writer.execute("CREATE TABLE t (n INTEGER)")
    watched = WalWatch(opener(path, "delete"))
    try:
        assert watched.state() is None
        writer.execute("INSERT INTO t VALUES (1)")
        assert watched.state() is None
    finally:
        watched.close()
        writer.close()


def test_a_database_that_cannot_be_opened_is_not_watched(tmp_path: Path) -> None:
    def refused() -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    watched = WalWatch(refused)
    assert watched.state() is None


def test_a_commit_under_way_is_no_answer(watch: WalWatch) -> None:
    """While a commit rewrites the header, its two copies differ."""
    state = watch.state()
    assert state is not None
    torn = state[:HEADER] + bytes([state[HEADER] ^ 1]) + state[HEADER + 1 :]
    view, watch._view = watch._view, torn  # type: ignore[assignment]  # as a commit leaves it
    try:
        assert watch.state() is None
    finally:
        watch._view = view


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_maps_the_index_with_a_connection_of_its_own(
    database: tuple[Path, sqlite3.Connection], watch: WalWatch
) -> None:
    _, writer = database
    state, pin = watch.state(), watch._pin
    assert pin is not None
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's exit status says what it saw)
        fine = watch.state() == state and watch._pin is not None and watch._pin is not pin
        fine = fine and watch._inherited[0][0] is pin  # kept, not closed
        os._exit(0 if fine else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert watch._pin is pin  # the parent's is untouched
    writer.execute("INSERT INTO t VALUES (1)")
    assert watch.state() not in (None, state)
