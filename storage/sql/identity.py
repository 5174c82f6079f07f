"""The identity primitives in SQL (the rules are storage/identity_front.py's): a table
per kind, oldest first by ``seq``, read and changed as the login flows' tables are
(storage/sql/login.py), a taken key the unique constraint. Of workers
offering a first signing key at once, one is kept: an insert under a lock on the
table's name (storage/sql/dialect.py), since there is no row yet to lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Row, exists, insert, select

from storage.identity_front import Rec
from storage.identity_records import SigningKey, User
from storage.login_flows import Kind
from storage.sql import dialect
from storage.sql.identity_tables import instance_secrets, signing_keys
from storage.sql.login import TABLES, SqlLogin
from storage.sql.rows import values_of
from storage.stored import decoded

# The row of ``instance_secrets`` that holds the console's session secret.
SESSION_SECRET = "session_secret"


def user_record(row: Row[Any]) -> User:
    return decoded(User, row)


class SqlIdentity(SqlLogin):
    """Also the login flows' primitives (SqlLogin), which keys and users use too: a
    record is added by ``flow_add`` (a taken key is the unique constraint) and read
    by ``flow_get``."""

    def record_change(
        self, kind: Kind[Rec], org: str, key: str, changes: Mapping[str, object]
    ) -> Rec | None:
        return self.flow_change(kind, org, key, changes=changes)[0]

    def record_list(self, kind: Kind[Rec], org: str) -> list[Rec]:
        table = TABLES[kind.name]
        with self.db.read() as connection:
            rows = connection.execute(
                select(table).where(table.c.org == org).order_by(table.c.seq)
            ).all()
        return [decoded(kind.record, row) for row in rows]

    def has_records(self, kind: Kind[Any], org: str) -> bool:
        table = TABLES[kind.name]
        return bool(self.db.read_one(select(exists().where(table.c.org == org)))[0])  # type: ignore[index]

    def signing_keys(self) -> list[SigningKey]:
        with self.db.read() as connection:
            rows = connection.execute(select(signing_keys).order_by(signing_keys.c.seq)).all()
        return [decoded(SigningKey, row) for row in rows]

    def add_signing_key(self, key: SigningKey, *, only_first: bool) -> SigningKey:
        with self.db.write() as connection:
            dialect.serialize(connection, "signing_keys")
            newest = select(signing_keys).order_by(signing_keys.c.seq.desc()).limit(1)
            row = connection.execute(newest).first()
            if only_first and row is not None:
                return decoded(SigningKey, row)
            connection.execute(insert(signing_keys).values(**values_of(key)))
        return key

    def remove_signing_key(self, kid: str) -> None:
        with self.db.write() as connection:
            connection.execute(signing_keys.delete().where(signing_keys.c.kid == kid))

    def ensure_session_secret(self, candidate: str) -> str:
        with self.db.write() as connection:
            dialect.insert_ignoring_conflict(
                connection, instance_secrets, name=SESSION_SECRET, value=candidate
            )
            kept: str = connection.execute(
                select(instance_secrets.c.value).where(instance_secrets.c.name == SESSION_SECRET)
            ).scalar_one()
        return kept
