"""The SQL backend: SQLite (the embedded default) and PostgreSQL, one set of SQLAlchemy
Core tables (tables.py, identity_tables.py, usage_tables.py) migrated by Alembic
(schema.py, migrations/), one module per concern combined into
:class:`storage.sql.storage.SqlStorage`."""
