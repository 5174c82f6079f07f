"""New events reach waiters of other processes: PostgreSQL tells them (LISTEN/NOTIFY),
SQLite's waiters look every 0.2 s (CONTRACT: within 1 s, which bench/ measures).

A waiter waits far longer than anything but the end of its wait takes to wake it: one
woken well before that end was woken by what the test is about, however loaded the
machine."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from storage.sql import dialect
from storage.sql.engine import make_engine
from storage.sql.storage import SqlStorage
from tests.sql_support import PostgresSchema

ORG = "acme"
WAIT = 60.0


def _wake_time(waiter: SqlStorage, writer: SqlStorage) -> float:
    """Seconds from a commit in ``writer`` to ``waiter``'s wait_for_events returning it."""
    found: list[object] = []
    committed: list[float] = []

    def wait() -> None:
        found.extend(waiter.wait_for_events(ORG, "0-0", timeout=WAIT, limit=10))
        found.append(time.monotonic())

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.5)  # the waiter is waiting (were it not, it would find the event at once)
    writer.create_prompt(ORG, "greeting")
    committed.append(time.monotonic())
    thread.join(2 * WAIT)
    assert len(found) == 2, found  # the event, then when it arrived
    woke = found[-1]
    assert isinstance(woke, float)
    return woke - committed[0]


def test_a_waiter_on_sqlite_sees_another_process_commit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'promptsvc.db'}"
    # Separate storages share nothing in-process: as two gunicorn workers.
    waiter, writer = SqlStorage.from_url(url), SqlStorage.from_url(url)
    try:
        assert _wake_time(waiter, writer) < WAIT / 2  # its polling found it
    finally:
        waiter.close()
        writer.close()


def _wait_until_listening(url: str, channel: str, listeners: int) -> None:
    """Until ``listeners`` connections have run ``LISTEN channel`` (a channel of this
    test's own, so no other process's listener counts): a NOTIFY before that would
    reach nobody."""
    engine = make_engine(url)
    deadline = time.monotonic() + WAIT
    try:
        while True:
            with engine.connect() as connection:
                listening = connection.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE query = :query AND state = 'idle'"
                    ),
                    {"query": f"LISTEN {channel}"},
                ).scalar_one()
            if listening >= listeners:
                return
            assert time.monotonic() < deadline, "the listener never ran LISTEN"
            time.sleep(0.05)
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_notifies_waiters_of_other_processes(
    postgres_schema: PostgresSchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Polling only after the wait's end: only NOTIFY can wake the waiter before it.
    monkeypatch.setattr(dialect, "POLL_INTERVAL", 10 * WAIT)
    channel = f"promptsvc_events_{uuid.uuid4().hex[:12]}"
    monkeypatch.setattr(dialect, "EVENTS_CHANNEL", channel)
    postgres_schema.empty()
    waiter = SqlStorage.from_url(postgres_schema.url)
    writer = SqlStorage.from_url(postgres_schema.url)
    try:
        _wait_until_listening(postgres_schema.url, channel, 2)  # each storage listens
        assert _wake_time(waiter, writer) < WAIT / 2
    finally:
        waiter.close()
        writer.close()
