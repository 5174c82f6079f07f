"""Fixtures for the SQL backend's own tests: an empty database of each dialect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import sql_support

DIALECTS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=DIALECTS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a database with nothing in it: a new SQLite file, or a new
    PostgreSQL schema (dropped after the test)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'promptsvc.db'}"
        return
    for made in sql_support.postgres_schema(migrate=False):
        yield made.url
