"""The identity primitives in SQL (the rules are storage/identity_front.py's) and the
login flows' (storage/login_flows.py's), one way for both: a table per kind, keys and
users oldest first by ``seq``, a taken key the unique constraint, reads of a flow's
asking for ``expires_at > now``.

A conditional change reads the row locked (PostgreSQL; on SQLite every writing
transaction holds the database from its start) and changes it in the same transaction,
so of concurrent callers one sees the row as expected and the others see it changed.
Of workers offering a first signing key at once, one is kept: an insert under a lock on
the table's name (storage/sql/dialect.py), since there is no row yet to lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, Table, bindparam, exists, insert, or_, select, true, update
from sqlalchemy import exc as sa_exc

from storage.identity_front import RECORD_KINDS, Rec
from storage.identity_records import SigningKey, User
from storage.login_flows import KINDS, SWEEP_EVERY, Kind
from storage.sql import dialect
from storage.sql.core import Concern
from storage.sql.identity_tables import (
    api_keys,
    authorization_codes,
    device_authorizations,
    instance_secrets,
    realm_sessions,
    refresh_families,
    refresh_tokens,
    signing_keys,
    users,
)
from storage.sql.rows import values_of
from storage.stored import decoded

TABLES: dict[str, Table] = {
    "code": authorization_codes,
    "device": device_authorizations,
    "session": realm_sessions,
    "refresh": refresh_tokens,
    "family": refresh_families,
    "key": api_keys,
    "user": users,
}
assert set(TABLES) == {kind.name for kind in (*KINDS, *RECORD_KINDS)}
R = TypeVar("R")
# The row of ``instance_secrets`` that holds the console's session secret.
SESSION_SECRET = "session_secret"


def _by(table: Table, field: str) -> Any:
    where = [table.c.org == bindparam("org"), table.c[field] == bindparam("value")]
    if "expires_at" in table.c:
        where.append(table.c.expires_at > bindparam("now"))
    return select(table).where(*where)


# Built once, so they take the read lane (storage/sql/direct.py): every write by a key
# reads it.
_BY = {
    (kind.name, field): _by(TABLES[kind.name], field)
    for kind in (*KINDS, *RECORD_KINDS)
    for field in (kind.key, kind.unique)
    if field is not None
}


def user_record(row: Row[Any]) -> User:
    return decoded(User, row)


class SqlIdentity(Concern):
    """A record of every kind is added by ``flow_add`` and read by ``flow_get``."""

    _flow_writes = 0

    def _sweep_now_and_then(self, connection: Connection) -> None:
        self._flow_writes += 1
        if self._flow_writes % SWEEP_EVERY == 0:
            for table in (TABLES[kind.name] for kind in KINDS):
                connection.execute(table.delete().where(table.c.expires_at <= self.db.clock()))

    def flow_add(self, kind: Kind[R], record: R, *, only_new: bool = False) -> bool:
        table, values = TABLES[kind.name], values_of(record)
        same = [table.c[kind.key] == values[kind.key]]
        if kind.unique is not None:
            same.append(table.c[kind.unique] == values[kind.unique])
        try:
            with self.db.write() as connection:
                # Only an expired flow record gives way to a new one; any to a
                # replacement; a key or user to none.
                if "expires_at" in table.c:
                    self._sweep_now_and_then(connection)
                    gone = table.c.expires_at <= self.db.clock() if only_new else true()
                    where = (table.c.org == values["org"], or_(*same), gone)
                    connection.execute(table.delete().where(*where))
                connection.execute(insert(table).values(**values))
        except sa_exc.IntegrityError:
            return False
        return True

    def flow_get(self, kind: Kind[R], org: str, value: str, *, by_unique: bool = False) -> R | None:
        field = kind.unique if by_unique and kind.unique else kind.key
        params: dict[str, Any] = {"org": org, "value": value}
        if "expires_at" in TABLES[kind.name].c:
            params["now"] = self.db.clock()
        row = self.db.read_one(_BY[kind.name, field], params)
        return None if row is None else decoded(kind.record, row)

    def flow_change(
        self,
        kind: Kind[R],
        org: str,
        key: str,
        *,
        expect: Mapping[str, object] | None = None,
        changes: Mapping[str, object] | None = None,
        delete: bool = False,
    ) -> tuple[R | None, bool]:
        table = TABLES[kind.name]
        this = (table.c.org == org, table.c[kind.key] == key)
        with self.db.write() as connection:
            found = select(table).where(*this)
            if "expires_at" in table.c:
                found = found.where(table.c.expires_at > self.db.clock())
            row = connection.execute(dialect.locked(connection, found)).first()
            if row is None:
                return None, False
            record = decoded(kind.record, row)
            if any(getattr(record, name) != value for name, value in (expect or {}).items()):
                return record, False
            if delete:
                connection.execute(table.delete().where(*this))
            elif changes:
                connection.execute(update(table).where(*this).values(**changes))
        return record, True

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
