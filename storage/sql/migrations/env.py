"""Alembic's environment, run from code only (storage/sql/schema.py): the caller hands
over a connection in a transaction that holds the migration lock."""

from __future__ import annotations

from alembic import context

from storage.sql import identity_tables, usage_tables  # noqa: F401  (their tables join metadata)
from storage.sql.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite cannot ALTER most things: Alembic's batch mode copies the table instead.
    render_as_batch=connection.dialect.name == "sqlite",
    transaction_per_migration=False,
)
with context.begin_transaction():
    context.run_migrations()
