"""API keys and users of each org (oldest first, by ``seq``; a taken client id or
username is the unique constraint); the signing keys and the console's session secret.
Of many workers offering a first one at once, one candidate is kept: the secret is an
insert ignoring a conflict, the first signing key an insert under a lock on the table's
name (storage/sql/dialect.py), since there is no row yet to lock.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, bindparam, exists, insert, or_, select, update
from sqlalchemy import exc as sa_exc

from storage.errors import ApiKeyExists, ApiKeyNotFound, UserExists, UserNotFound
from storage.identity_records import ApiKey, SigningKey, User
from storage.sql import dialect
from storage.sql.core import Concern
from storage.sql.identity_tables import api_keys, instance_secrets, signing_keys, users
from storage.sql.rows import record_of, values_of

# The row of ``instance_secrets`` that holds the console's session secret.
SESSION_SECRET = "session_secret"


def api_key_record(row: Row[Any]) -> ApiKey:
    return record_of(ApiKey, row)


def user_record(row: Row[Any]) -> User:
    return record_of(User, row)


# Built once: every write by a key reads its owner (identity.people.acting_person).
_API_KEY = select(api_keys).where(
    api_keys.c.org == bindparam("org"), api_keys.c.client_id == bindparam("client_id")
)


class SqlIdentity(Concern):
    # -- orgs and API keys

    def org_exists(self, org: str) -> bool:
        row = self.db.read_one(
            select(
                or_(
                    exists().where(api_keys.c.org == org),
                    exists().where(users.c.org == org),
                )
            )
        )
        return bool(row and row[0])

    def add_api_key(self, key: ApiKey) -> None:
        try:
            with self.db.write() as connection:
                connection.execute(insert(api_keys).values(**values_of(key)))
        except sa_exc.IntegrityError:
            raise ApiKeyExists(key.client_id) from None

    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        row = self.db.read_one(_API_KEY, {"org": org, "client_id": client_id})
        return None if row is None else api_key_record(row)

    def list_api_keys(self, org: str) -> list[ApiKey]:
        with self.db.read() as connection:
            rows = connection.execute(
                select(api_keys).where(api_keys.c.org == org).order_by(api_keys.c.seq)
            ).all()
        return [api_key_record(row) for row in rows]

    def _change_api_key(self, org: str, client_id: str, **changes: Any) -> ApiKey:
        with self.db.write() as connection:
            row = connection.execute(
                update(api_keys)
                .where(api_keys.c.org == org, api_keys.c.client_id == client_id)
                .values(**changes)
                .returning(*api_keys.c)
            ).first()
        if row is None:
            raise ApiKeyNotFound(client_id)
        return api_key_record(row)

    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        return self._change_api_key(org, client_id, revoked=True)

    def set_api_key_secret(self, org: str, client_id: str, secret_hash: str) -> ApiKey:
        return self._change_api_key(org, client_id, secret_hash=secret_hash)

    # -- users

    def add_user(self, user: User) -> None:
        try:
            with self.db.write() as connection:
                connection.execute(insert(users).values(**values_of(user)))
        except sa_exc.IntegrityError:
            raise UserExists(user.username) from None

    def get_user(self, org: str, username: str) -> User | None:
        row = self.db.read_one(
            select(users).where(users.c.org == org, users.c.username == username)
        )
        return None if row is None else user_record(row)

    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        row = self.db.read_one(select(users).where(users.c.org == org, users.c.user_id == user_id))
        return None if row is None else user_record(row)

    def list_users(self, org: str) -> list[User]:
        with self.db.read() as connection:
            rows = connection.execute(
                select(users).where(users.c.org == org).order_by(users.c.seq)
            ).all()
        return [user_record(row) for row in rows]

    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        changes: dict[str, Any] = {"updated_at": self.db.clock()}
        if role is not None:
            changes["role"] = role
        if disabled is not None:
            changes["disabled"] = disabled
        if password_hash is not None:
            changes["password_hash"] = password_hash
        with self.db.write() as connection:
            row = connection.execute(
                update(users)
                .where(users.c.org == org, users.c.username == username)
                .values(**changes)
                .returning(*users.c)
            ).first()
        if row is None:
            raise UserNotFound(username)
        return user_record(row)

    # -- signing keys

    def signing_keys(self) -> list[SigningKey]:
        with self.db.read() as connection:
            rows = connection.execute(select(signing_keys).order_by(signing_keys.c.seq)).all()
        return [record_of(SigningKey, row) for row in rows]

    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        with self.db.write() as connection:
            dialect.serialize(connection, "signing_keys")
            newest = select(signing_keys).order_by(signing_keys.c.seq.desc()).limit(1)
            row = connection.execute(newest).first()
            if row is None:
                connection.execute(insert(signing_keys).values(**values_of(candidate)))
                return candidate
        return record_of(SigningKey, row)

    def add_signing_key(self, key: SigningKey) -> None:
        with self.db.write() as connection:
            # Not beside a first key being chosen: then there would be two first keys.
            dialect.serialize(connection, "signing_keys")
            connection.execute(insert(signing_keys).values(**values_of(key)))

    def remove_signing_key(self, kid: str) -> None:
        with self.db.write() as connection:
            connection.execute(signing_keys.delete().where(signing_keys.c.kid == kid))

    # -- the console's session secret

    def ensure_session_secret(self, candidate: str) -> str:
        with self.db.write() as connection:
            dialect.insert_ignoring_conflict(
                connection, instance_secrets, name=SESSION_SECRET, value=candidate
            )
            kept: str = connection.execute(
                select(instance_secrets.c.value).where(instance_secrets.c.name == SESSION_SECRET)
            ).scalar_one()
        return kept
