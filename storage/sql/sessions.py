"""Login flow state, part two: realm sessions and refresh token families (the rules
are in IdentityStore's docstring; expiry and the sweep as in storage/sql/login.py).

A token counts while it, its family and its session (if it has one) live. Rotation
locks the presented token's row, then its family's: a concurrent rotation of the same
token waits, then finds it used and revokes the family, committed before
RefreshTokenReused is raised. Logout deletes the session and revokes its families in
one transaction.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Exists, Select, and_, exists, insert, or_, select, update

from storage.errors import RefreshTokenReused, SessionNotFound
from storage.login_records import RealmSession, RefreshToken
from storage.sql import dialect
from storage.sql.core import Concern, Database
from storage.sql.identity_tables import realm_sessions, refresh_families, refresh_tokens
from storage.sql.login import SqlLogin
from storage.sql.rows import record_of, values_of


def _live_session(org: str, session_id: Any, now: datetime) -> Exists:
    return exists().where(
        realm_sessions.c.org == org,
        realm_sessions.c.session_id == session_id,
        realm_sessions.c.expires_at > now,
    )


def _live_token(org: str, token_hash: str, now: datetime) -> Select[Any]:
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


class SqlSessions(Concern):
    def __init__(self, db: Database, login: SqlLogin) -> None:
        super().__init__(db)
        self.login = login  # a session write counts as a login flow write (the sweep)

    # -- realm sessions

    def add_session(self, session: RealmSession) -> None:
        sessions = realm_sessions.c
        with self.db.write() as connection:
            self.login.added(connection, self.db.clock())
            connection.execute(
                realm_sessions.delete().where(
                    sessions.org == session.org, sessions.session_id == session.session_id
                )
            )
            connection.execute(insert(realm_sessions).values(**values_of(session)))

    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        sessions = realm_sessions.c
        row = self.db.read_one(
            select(realm_sessions).where(
                sessions.org == org,
                sessions.session_id == session_id,
                sessions.expires_at > self.db.clock(),
            )
        )
        return None if row is None else record_of(RealmSession, row)

    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        now = self.db.clock()
        sessions, families = realm_sessions.c, refresh_families.c
        with self.db.write() as connection:
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
        return record_of(RealmSession, row) if row is not None and row.expires_at > now else None

    # -- refresh token families

    def start_refresh_family(self, token: RefreshToken) -> None:
        now = self.db.clock()
        sessions = realm_sessions.c
        with self.db.write() as connection:
            self.login.added(connection, now)
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
            connection.execute(insert(refresh_tokens).values(**_new_token_row(token)))

    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        row = self.db.read_one(_live_token(org, token_hash, self.db.clock()))
        return None if row is None else record_of(RefreshToken, row)

    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        now = self.db.clock()
        tokens, families = refresh_tokens.c, refresh_families.c
        with self.db.write() as connection:
            self.login.added(connection, now)
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
                connection.execute(insert(refresh_tokens).values(**_new_token_row(successor)))
                # The family lives as long as its newest token.
                if expires_at > family_row.expires_at:
                    connection.execute(this_family.values(expires_at=expires_at))
        if successor is None:
            raise RefreshTokenReused(row.family_id)
        return successor

    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        families = refresh_families.c
        with self.db.write() as connection:
            connection.execute(
                update(refresh_families)
                .where(families.org == org, families.family_id == family_id)
                .values(revoked=True)
            )


def _new_token_row(token: RefreshToken) -> dict[str, Any]:
    """The row of a token just issued (never used yet)."""
    return values_of(replace(token, used=False))
