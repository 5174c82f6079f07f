"""New events reach waiters of other processes: PostgreSQL tells them (LISTEN/NOTIFY),
SQLite's waiters look every 0.2 s (CONTRACT: within 1 s)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from storage.sql import dialect
from storage.sql.storage import SqlStorage
from tests.sql_support import PostgresSchema

ORG = "acme"


def _wake_time(waiter: SqlStorage, writer: SqlStorage) -> float:
    """Seconds from a commit in ``writer`` to ``waiter``'s wait_for_events returning it."""
    found: list[object] = []
    committed: list[float] = []

    def wait() -> None:
        found.extend(waiter.wait_for_events(ORG, "0-0", timeout=10, limit=10))
        found.append(time.monotonic())

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.5)  # the waiter is waiting
    writer.create_prompt(ORG, "greeting")
    committed.append(time.monotonic())
    thread.join(15)
    assert len(found) == 2, found  # the event, then when it arrived
    woke = found[-1]
    assert isinstance(woke, float)
    return woke - committed[0]


def test_a_waiter_on_sqlite_sees_another_process_commit_within_a_second(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'promptsvc.db'}"
    # Separate storages share nothing in-process: as two gunicorn workers.
    waiter, writer = SqlStorage.from_url(url), SqlStorage.from_url(url)
    try:
        assert _wake_time(waiter, writer) < 1.0
    finally:
        waiter.close()
        writer.close()


@pytest.mark.postgres
def test_postgres_notifies_waiters_of_other_processes(
    postgres_schema: PostgresSchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Polling slower than the bound: only NOTIFY can wake the waiter in time.
    monkeypatch.setattr(dialect, "POLL_INTERVAL", 5.0)
    postgres_schema.empty()
    waiter = SqlStorage.from_url(postgres_schema.url)
    writer = SqlStorage.from_url(postgres_schema.url)
    try:
        time.sleep(0.5)  # the listener has connected
        assert _wake_time(waiter, writer) < 1.0
    finally:
        waiter.close()
        writer.close()
