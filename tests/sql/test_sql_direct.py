"""Writes on PostgreSQL through libpq (storage/sql/direct.py): the libpq side of a pooled
connection lives as long as that connection, no longer."""

from __future__ import annotations

import gc
import weakref

import pytest

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
