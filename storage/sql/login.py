"""Login flow state, part one: authorization codes and device authorizations (the
rules are in IdentityStore's docstring); realm sessions and refresh token families are
storage/sql/sessions.py.

Every record has an ``expires_at`` (the storage clock): reads ask for ``expires_at >
now``, so an expired record is simply absent; expired rows go when met by a write,
and all of them every ``SWEEP_EVERY`` flow writes of a process.

Each step that must happen once is one transaction that either deletes with
``RETURNING`` (taking a code, consuming a device authorization: of concurrent callers
one gets the row, the others find none) or locks the rows it reads before changing
them (deciding and polling a device). On SQLite every writing transaction holds the
database from its start (storage/sql/engine.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, or_, select, update
from sqlalchemy import exc as sa_exc

from storage.errors import DeviceAlreadyDecided, DeviceCodeExists
from storage.login_records import AuthorizationCode, DeviceAuthorization
from storage.sql import dialect
from storage.sql.core import Concern
from storage.sql.identity_tables import (
    authorization_codes,
    device_authorizations,
    realm_sessions,
    refresh_families,
    refresh_tokens,
)
from storage.sql.rows import record_of, values_of

# Every this many flow writes, a process drops every expired flow row, so records
# nobody asks for again (abandoned logins) cannot pile up.
SWEEP_EVERY = 512
_FLOW_TABLES = (
    authorization_codes,
    device_authorizations,
    realm_sessions,
    refresh_tokens,
    refresh_families,
)


class SqlLogin(Concern):
    _flow_writes = 0

    def added(self, connection: Connection, now: datetime) -> None:
        """Count a flow write; every SWEEP_EVERY-th drops every expired flow row."""
        self._flow_writes += 1
        if self._flow_writes % SWEEP_EVERY == 0:
            for table in _FLOW_TABLES:
                connection.execute(table.delete().where(table.c.expires_at <= now))

    # -- authorization codes

    def add_authorization_code(self, code: AuthorizationCode) -> None:
        codes = authorization_codes.c
        with self.db.write() as connection:
            self.added(connection, self.db.clock())
            connection.execute(
                authorization_codes.delete().where(
                    codes.org == code.org, codes.code_hash == code.code_hash
                )
            )
            connection.execute(insert(authorization_codes).values(**values_of(code)))

    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        now = self.db.clock()
        codes = authorization_codes.c
        with self.db.write() as connection:
            row = connection.execute(
                authorization_codes.delete()
                .where(codes.org == org, codes.code_hash == code_hash)
                .returning(*authorization_codes.c)
            ).first()
        return (
            record_of(AuthorizationCode, row) if row is not None and row.expires_at > now else None
        )

    # -- device authorizations

    def _find_device(
        self,
        connection: Connection,
        org: str,
        *,
        device_code_hash: str = "",
        user_code: str = "",
    ) -> Row[Any] | None:
        """The live device authorization with this device code (or user code), locked
        for the transaction (PostgreSQL)."""
        devices = device_authorizations.c
        key = (
            devices.user_code == user_code
            if user_code
            else devices.device_code_hash == device_code_hash
        )
        statement = select(device_authorizations).where(
            devices.org == org, key, devices.expires_at > self.db.clock()
        )
        return connection.execute(dialect.locked(connection, statement)).first()

    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        now = self.db.clock()
        devices = device_authorizations.c
        try:
            with self.db.write() as connection:
                self.added(connection, now)
                # An expired record frees its codes.
                connection.execute(
                    device_authorizations.delete().where(
                        devices.org == device.org,
                        or_(
                            devices.device_code_hash == device.device_code_hash,
                            devices.user_code == device.user_code,
                        ),
                        devices.expires_at <= now,
                    )
                )
                connection.execute(insert(device_authorizations).values(**values_of(device)))
        except sa_exc.IntegrityError:
            raise DeviceCodeExists("device code or user code in use") from None

    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        row = self.db.read_one(
            select(device_authorizations).where(
                devices.org == org,
                devices.device_code_hash == device_code_hash,
                devices.expires_at > self.db.clock(),
            )
        )
        return None if row is None else record_of(DeviceAuthorization, row)

    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        row = self.db.read_one(
            select(device_authorizations).where(
                devices.org == org,
                devices.user_code == user_code,
                devices.expires_at > self.db.clock(),
            )
        )
        return None if row is None else record_of(DeviceAuthorization, row)

    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        with self.db.write() as connection:
            row = self._find_device(connection, org, user_code=user_code)
            if row is None:
                return None
            if row.status != "pending":
                raise DeviceAlreadyDecided(f"device authorization is {row.status} already")
            decided = connection.execute(
                update(device_authorizations)
                .where(devices.org == org, devices.device_code_hash == row.device_code_hash)
                .values(
                    status="approved" if approved else "denied",
                    user_id=user_id,
                    session_id=session_id,
                )
                .returning(*device_authorizations.c)
            ).one()
        return record_of(DeviceAuthorization, decided)

    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        with self.db.write() as connection:
            row = self._find_device(connection, org, device_code_hash=device_code_hash)
            if row is None:
                return None
            connection.execute(
                update(device_authorizations)
                .where(devices.org == org, devices.device_code_hash == device_code_hash)
                .values(last_polled_at=self.db.clock())
            )
        return record_of(DeviceAuthorization, row)

    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        with self.db.write() as connection:
            row = connection.execute(
                device_authorizations.delete()
                .where(
                    devices.org == org,
                    devices.device_code_hash == device_code_hash,
                    devices.status == "approved",
                    devices.expires_at > self.db.clock(),
                )
                .returning(*device_authorizations.c)
            ).first()
        return None if row is None else record_of(DeviceAuthorization, row)
