"""Statements per release operation on the SQL backend: ``python -m bench.sql_round_trips
[--postgres-url URL]``.

Each operation runs once on a prompt with a published version, a staging environment
that needs one approval, and some history, on a fresh SQLite file and on the emptied
PostgreSQL database at ``--postgres-url`` (bench/sqldb.py). A SQLAlchemy
``before_cursor_execute`` listener counts the statements sent (SQLite's ``BEGIN
IMMEDIATE`` included, PostgreSQL's implicit ``BEGIN`` not) and a ``commit`` listener the
commits: on PostgreSQL each is a round trip to the server, and so is the ``BEGIN`` that
psycopg sends before a transaction's first statement. The listener turns off what
storage/sql/direct.py does, so the PostgreSQL round trips are counted in a second run
without it: the ``ReadyForQuery`` messages in libpq's trace of the connections (one
per statement sent alone, one per batch sent in pipeline mode). The last row is the
benches' bare write (one INSERT in one transaction, bench/sqldb.py), for scale.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event

from bench import sqldb
from bench.report import table
from storage.sql.storage import SqlStorage

ORG = "bench"
USER = "u-author"
APPROVER = "u-approver"


def _listening(store: SqlStorage, operation: Callable[[], Any], **listeners: Any) -> None:
    """Run ``operation`` with ``listeners`` (event name -> function) on the engine."""
    for name, listener in listeners.items():
        event.listen(store.engine, name, listener)
    try:
        operation()
    finally:
        for name, listener in listeners.items():
            event.remove(store.engine, name, listener)


def round_trips(store: SqlStorage, operation: Callable[[], Any]) -> tuple[int]:
    with tempfile.NamedTemporaryFile("r") as trace:
        fd = os.open(trace.name, os.O_WRONLY | os.O_APPEND)

        def checkout(driver: Any, *_: Any) -> None:
            driver.pgconn.trace(fd)

        def checkin(driver: Any, *_: Any) -> None:
            driver.pgconn.untrace()

        try:
            _listening(store, operation, checkout=checkout, checkin=checkin)
        finally:
            os.close(fd)
        return (sum("\tB\t" in line and "ReadyForQuery" in line for line in trace),)


def _count(store: SqlStorage, operation: Callable[[], Any]) -> tuple[int, ...]:
    counts = {"statements": 0, "commits": 0}

    def statement(*_: Any) -> None:
        counts["statements"] += 1

    def commit(*_: Any) -> None:
        counts["commits"] += 1

    _listening(store, operation, before_cursor_execute=statement, commit=commit)
    return counts["statements"], counts["commits"]


def measure(url: str, count: Any = _count, org: str = ORG) -> dict[str, tuple[int, ...]]:
    """The ``count`` of each operation, on a prompt of its own in ``org``."""
    store = SqlStorage.from_url(url)
    try:
        store.create_prompt(org, "p")
        for _ in range(3):
            number = store.create_version(org, "p", "hello {{name}}", USER).version
            store.promote(org, "p", str(number), USER)
        store.create_environment(org, "staging", 1)
        store.create_version(org, "p", "hello again {{name}}", USER)
        found: dict[str, tuple[int, ...]] = {}
        found["create_version"] = count(
            store, lambda: store.create_version(org, "p", "hello {{name}}!", USER)
        )
        found["promote"] = count(store, lambda: store.promote(org, "p", "5", USER))
        found["rollback"] = count(store, lambda: store.rollback(org, "p", USER))
        review = store.request_review(org, "p", "4", "staging", USER)
        found["approve (applies)"] = count(
            store, lambda: store.approve_review(org, review.review_id, APPROVER, "approver")
        )
        # For scale: the benches' bare single-row commit (bench/sqldb.py).
        sqldb.make_bare_writes(store.engine)
        found["bare write (one INSERT)"] = count(
            store, lambda: sqldb.bare_write(store.engine, "hello")
        )
        return found
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres-url", default=sqldb.POSTGRES_URL)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        sqlite = measure(sqldb.sqlite_url(Path(directory)))
    postgres = {}
    for count in (_count, round_trips):
        sqldb.empty_postgres(args.postgres_url)
        try:
            for name, counted in measure(args.postgres_url, count).items():
                postgres[name] = postgres.get(name, ()) + counted
        finally:
            sqldb.empty_postgres(args.postgres_url)
    rows = [[name, *sqlite[name], *postgres[name]] for name in sqlite]
    print(
        table(
            [
                "operation",
                "SQLite statements",
                "SQLite commits",
                "PostgreSQL statements",
                "PostgreSQL commits",
                "PostgreSQL round trips",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
