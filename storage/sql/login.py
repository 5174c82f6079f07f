"""Login flow state: authorization codes, device authorizations, realm sessions and
refresh token families (the rules are in Storage's docstring).

Every record has an ``expires_at`` (the storage clock): reads ask for ``expires_at >
now``, so an expired record is simply absent; expired rows go when met by a write,
and all of them every ``SWEEP_EVERY`` flow writes of a process.

Each step that must happen once is one transaction that either deletes with
``RETURNING`` (taking a code, consuming a device authorization: of concurrent callers
one gets the row, the others find none) or locks the rows it reads before changing
them (deciding and polling a device, rotating a refresh token: a concurrent rotation of
the same token waits, then sees it used and revokes the family). On SQLite every
writing transaction holds the database from its start (storage/sql/engine.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, and_, exists, insert, or_, select, update
from sqlalchemy import exc as sa_exc

from storage.errors import (
    DeviceAlreadyDecided,
    DeviceCodeExists,
    RefreshTokenReused,
    SessionNotFound,
)
from storage.interface import IdentityStore
from storage.records import AuthorizationCode, DeviceAuthorization, RealmSession, RefreshToken
from storage.sql import dialect
from storage.sql.core import SqlCore
from storage.sql.tables import (
    authorization_codes,
    device_authorizations,
    realm_sessions,
    refresh_families,
    refresh_tokens,
)

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


def _code(row: Row[Any]) -> AuthorizationCode:
    return AuthorizationCode(
        org=row.org,
        code_hash=row.code_hash,
        client_id=row.client_id,
        redirect_uri=row.redirect_uri,
        scope=row.scope,
        user_id=row.user_id,
        session_id=row.session_id,
        code_challenge=row.code_challenge,
        code_challenge_method=row.code_challenge_method,
        nonce=row.nonce,
        auth_time=row.auth_time,
        expires_at=row.expires_at,
    )


def _device(row: Row[Any]) -> DeviceAuthorization:
    return DeviceAuthorization(
        org=row.org,
        device_code_hash=row.device_code_hash,
        user_code=row.user_code,
        client_id=row.client_id,
        scope=row.scope,
        interval=row.interval,
        created_at=row.created_at,
        expires_at=row.expires_at,
        status=row.status,
        user_id=row.user_id,
        session_id=row.session_id,
        last_polled_at=row.last_polled_at,
    )


def _session(row: Row[Any]) -> RealmSession:
    return RealmSession(
        org=row.org,
        session_id=row.session_id,
        user_id=row.user_id,
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


def _token(row: Row[Any]) -> RefreshToken:
    return RefreshToken(
        org=row.org,
        token_hash=row.token_hash,
        family_id=row.family_id,
        client_id=row.client_id,
        user_id=row.user_id,
        scope=row.scope,
        session_id=row.session_id,
        issued_at=row.issued_at,
        expires_at=row.expires_at,
        used=row.used,
    )


def _live_session(org: str, session_id: Any, now: datetime) -> Any:
    return exists().where(
        realm_sessions.c.org == org,
        realm_sessions.c.session_id == session_id,
        realm_sessions.c.expires_at > now,
    )


def _live_token(org: str, token_hash: str, now: datetime) -> Any:
    """The token, while it, its family and its session (if it has one) live."""
    tokens, families = refresh_tokens.c, refresh_families.c
    return (
        select(refresh_tokens)
        .join(
            refresh_families,
            and_(families.org == tokens.org, families.family_id == tokens.family_id),
        )
        .where(
            tokens.org == org,
            tokens.token_hash == token_hash,
            tokens.expires_at > now,
            ~families.revoked,
            families.expires_at > now,
            or_(tokens.session_id.is_(None), _live_session(org, tokens.session_id, now)),
        )
    )


class SqlLogin(SqlCore, IdentityStore):
    _flow_writes = 0

    def _added(self, connection: Connection, now: datetime) -> None:
        """Count a flow write; every SWEEP_EVERY-th drops every expired flow row."""
        self._flow_writes += 1
        if self._flow_writes % SWEEP_EVERY == 0:
            for table in _FLOW_TABLES:
                connection.execute(table.delete().where(table.c.expires_at <= now))

    # -- authorization codes

    def add_authorization_code(self, code: AuthorizationCode) -> None:
        codes = authorization_codes.c
        with self._write() as connection:
            self._added(connection, self.clock())
            connection.execute(
                authorization_codes.delete().where(
                    codes.org == code.org, codes.code_hash == code.code_hash
                )
            )
            connection.execute(
                insert(authorization_codes).values(
                    org=code.org,
                    code_hash=code.code_hash,
                    client_id=code.client_id,
                    redirect_uri=code.redirect_uri,
                    scope=code.scope,
                    user_id=code.user_id,
                    session_id=code.session_id,
                    code_challenge=code.code_challenge,
                    code_challenge_method=code.code_challenge_method,
                    nonce=code.nonce,
                    auth_time=code.auth_time,
                    expires_at=code.expires_at,
                )
            )

    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        now = self.clock()
        codes = authorization_codes.c
        with self._write() as connection:
            row = connection.execute(
                authorization_codes.delete()
                .where(codes.org == org, codes.code_hash == code_hash)
                .returning(*authorization_codes.c)
            ).first()
        return _code(row) if row is not None and row.expires_at > now else None

    # -- device authorizations

    def _find_device(
        self, connection: Connection, org: str, *, device_code_hash: str = "", user_code: str = ""
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
            devices.org == org, key, devices.expires_at > self.clock()
        )
        return connection.execute(dialect.locked(connection, statement)).first()

    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        now = self.clock()
        devices = device_authorizations.c
        try:
            with self._write() as connection:
                self._added(connection, now)
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
                connection.execute(
                    insert(device_authorizations).values(
                        org=device.org,
                        device_code_hash=device.device_code_hash,
                        user_code=device.user_code,
                        client_id=device.client_id,
                        scope=device.scope,
                        interval=device.interval,
                        created_at=device.created_at,
                        expires_at=device.expires_at,
                        status=device.status,
                        user_id=device.user_id,
                        session_id=device.session_id,
                        last_polled_at=device.last_polled_at,
                    )
                )
        except sa_exc.IntegrityError:
            raise DeviceCodeExists("device code or user code in use") from None

    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        row = self._read_one(
            select(device_authorizations).where(
                devices.org == org,
                devices.device_code_hash == device_code_hash,
                devices.expires_at > self.clock(),
            )
        )
        return None if row is None else _device(row)

    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        row = self._read_one(
            select(device_authorizations).where(
                devices.org == org,
                devices.user_code == user_code,
                devices.expires_at > self.clock(),
            )
        )
        return None if row is None else _device(row)

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
        with self._write() as connection:
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
        return _device(decided)

    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        with self._write() as connection:
            row = self._find_device(connection, org, device_code_hash=device_code_hash)
            if row is None:
                return None
            connection.execute(
                update(device_authorizations)
                .where(devices.org == org, devices.device_code_hash == device_code_hash)
                .values(last_polled_at=self.clock())
            )
        return _device(row)

    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        devices = device_authorizations.c
        with self._write() as connection:
            row = connection.execute(
                device_authorizations.delete()
                .where(
                    devices.org == org,
                    devices.device_code_hash == device_code_hash,
                    devices.status == "approved",
                    devices.expires_at > self.clock(),
                )
                .returning(*device_authorizations.c)
            ).first()
        return None if row is None else _device(row)

    # -- realm sessions

    def add_session(self, session: RealmSession) -> None:
        sessions = realm_sessions.c
        with self._write() as connection:
            self._added(connection, self.clock())
            connection.execute(
                realm_sessions.delete().where(
                    sessions.org == session.org, sessions.session_id == session.session_id
                )
            )
            connection.execute(
                insert(realm_sessions).values(
                    org=session.org,
                    session_id=session.session_id,
                    user_id=session.user_id,
                    created_at=session.created_at,
                    expires_at=session.expires_at,
                )
            )

    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        sessions = realm_sessions.c
        row = self._read_one(
            select(realm_sessions).where(
                sessions.org == org,
                sessions.session_id == session_id,
                sessions.expires_at > self.clock(),
            )
        )
        return None if row is None else _session(row)

    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        now = self.clock()
        sessions, families = realm_sessions.c, refresh_families.c
        with self._write() as connection:
            row = connection.execute(
                realm_sessions.delete()
                .where(sessions.org == org, sessions.session_id == session_id)
                .returning(*realm_sessions.c)
            ).first()
            connection.execute(
                update(refresh_families)
                .where(families.org == org, families.session_id == session_id)
                .values(revoked=True)
            )
        return _session(row) if row is not None and row.expires_at > now else None

    # -- refresh token families

    def start_refresh_family(self, token: RefreshToken) -> None:
        now = self.clock()
        sessions = realm_sessions.c
        with self._write() as connection:
            self._added(connection, now)
            if token.session_id is not None:
                # Locked, so a logout of the session waits for the family to join it.
                statement = select(sessions.session_id).where(
                    sessions.org == token.org,
                    sessions.session_id == token.session_id,
                    sessions.expires_at > now,
                )
                if connection.execute(dialect.locked(connection, statement)).first() is None:
                    raise SessionNotFound(f"session {token.session_id} has ended")
            connection.execute(
                insert(refresh_families).values(
                    org=token.org,
                    family_id=token.family_id,
                    session_id=token.session_id,
                    expires_at=token.expires_at,
                    revoked=False,
                )
            )
            connection.execute(insert(refresh_tokens).values(**_token_values(token)))

    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        row = self._read_one(_live_token(org, token_hash, self.clock()))
        return None if row is None else _token(row)

    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        now = self.clock()
        tokens, families = refresh_tokens.c, refresh_families.c
        with self._write() as connection:
            self._added(connection, now)
            # The token row first, locked: a concurrent rotation of it waits here, and
            # then finds it used.
            found = select(refresh_tokens).where(
                tokens.org == org, tokens.token_hash == token_hash, tokens.expires_at > now
            )
            row = connection.execute(dialect.locked(connection, found)).first()
            if row is None:
                return None
            family = select(refresh_families.c.expires_at).where(
                families.org == org,
                families.family_id == row.family_id,
                ~families.revoked,
                families.expires_at > now,
            )
            family_row = connection.execute(dialect.locked(connection, family)).first()
            if family_row is None:
                return None
            if row.session_id is not None:
                alive = connection.execute(select(_live_session(org, row.session_id, now)))
                if not alive.scalar():
                    return None
            this_family = update(refresh_families).where(
                families.org == org, families.family_id == row.family_id
            )
            if row.used:
                # Committed before the error is raised: the replay revokes the family.
                connection.execute(this_family.values(revoked=True))
                successor = None
            else:
                connection.execute(
                    update(refresh_tokens)
                    .where(tokens.org == org, tokens.token_hash == token_hash)
                    .values(used=True)
                )
                successor = RefreshToken(
                    org=org,
                    token_hash=new_token_hash,
                    family_id=row.family_id,
                    client_id=row.client_id,
                    user_id=row.user_id,
                    scope=row.scope if scope is None else scope,
                    session_id=row.session_id,
                    issued_at=now,
                    expires_at=expires_at,
                )
                connection.execute(insert(refresh_tokens).values(**_token_values(successor)))
                # The family lives as long as its newest token.
                if expires_at > family_row.expires_at:
                    connection.execute(this_family.values(expires_at=expires_at))
        if successor is None:
            raise RefreshTokenReused(row.family_id)
        return successor

    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        families = refresh_families.c
        with self._write() as connection:
            connection.execute(
                update(refresh_families)
                .where(families.org == org, families.family_id == family_id)
                .values(revoked=True)
            )


def _token_values(token: RefreshToken) -> dict[str, Any]:
    return {
        "org": token.org,
        "token_hash": token.token_hash,
        "family_id": token.family_id,
        "client_id": token.client_id,
        "user_id": token.user_id,
        "scope": token.scope,
        "session_id": token.session_id,
        "issued_at": token.issued_at,
        "expires_at": token.expires_at,
        "used": False,
    }
