"""Writes on PostgreSQL through libpq (storage/sql/direct.py): the libpq side of a pooled
connection lives as long as that connection, no longer, and each release operation
takes the round trips docs/benchmarks.md counts."""

from __future__ import annotations

import gc
import weakref

import pytest

from bench import sql_round_trips
from storage.sql import direct
from storage.sql.storage import SqlStorage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


# SQLite's writes use the driver's cursor: PostgreSQL only.
@pytest.mark.parametrize(
    "empty_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_closed_connection_is_not_kept_for_its_prepared_statements(empty_url: str) -> None:
    store = SqlStorage.from_url(empty_url)
    store.create_prompt(ORG, "greeting")
    store.create_version(ORG, "greeting", "hello", USER)
    store.promote(ORG, "greeting", "1", USER)
    with store.engine.connect() as connection:
        pooled = connection.connection
        assert direct.WIRE in pooled.info  # the promotion's statements went this way
        driver = weakref.ref(pooled.dbapi_connection)
    del connection, pooled
    store.close()
    gc.collect()
    assert driver() is None


@pytest.mark.parametrize(
    "empty_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_each_release_operation_takes_its_round_trips_and_no_more(empty_url: str) -> None:
    """The counts of docs/benchmarks.md (bench/sql_round_trips.py): the ``ReadyForQuery``
    messages in libpq's trace of each operation."""
    # A statement object's first run goes through SQLAlchemy (storage/sql/direct.py):
    # counted once every statement has run, as in a server that has been up a while.
    sql_round_trips.measure(empty_url, org="first")
    counts = sql_round_trips.measure(empty_url, sql_round_trips.round_trips)
    assert {name: trips for name, (trips,) in counts.items()} == {
        "create_version": 3,
        "promote": 3,
        "rollback": 4,
        "approve (applies)": 4,
        "bare write (one INSERT)": 3,
    }
