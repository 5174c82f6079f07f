"""API keys, users, signing keys and the console's session secret on Redis."""

from __future__ import annotations

from storage.errors import ApiKeyExists, ApiKeyNotFound, UserExists, UserNotFound
from storage.identity_records import ApiKey, SigningKey, User
from storage.interface import IdentityStore
from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore, guard


class RedisIdentity(RedisCore[ClientT], IdentityStore):
    """API keys, users, signing keys and the session secret."""

    # -- orgs and API keys

    def org_exists(self, org: str) -> bool:
        with guard():
            return bool(self.client.exists(keys.api_keys(org), keys.users(org)))

    def add_api_key(self, key: ApiKey) -> None:
        hash_key = keys.api_key(key.org, key.client_id)
        args = [key.client_id, *codec.flat_fields(key)]
        self._index_org(key.org)
        if not self._run("add_api_key", [keys.api_keys(key.org), hash_key], args):
            raise ApiKeyExists(key.client_id)

    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        with guard():
            found: dict[str, str] = self.client.hgetall(keys.api_key(org, client_id))  # type: ignore[assignment]
        return codec.flat_record(ApiKey, found) if found else None

    def list_api_keys(self, org: str) -> list[ApiKey]:
        found = self._run("list_records", [keys.api_keys(org), keys.api_key(org, "")], [])
        return [codec.flat_record(ApiKey, codec.fields(flat)) for flat in found]

    def _change_api_key(self, org: str, client_id: str, field: str, value: str) -> ApiKey:
        found = self._run("update_record", [keys.api_key(org, client_id)], [field, value])
        if not found:
            raise ApiKeyNotFound(client_id)
        return codec.flat_record(ApiKey, codec.fields(found))

    def set_api_key_secret(self, org: str, client_id: str, secret_hash: str) -> ApiKey:
        return self._change_api_key(org, client_id, "secret_hash", secret_hash)

    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        return self._change_api_key(org, client_id, "revoked", "1")

    # -- users

    def add_user(self, user: User) -> None:
        org = user.org
        keys_ = [keys.users(org), keys.user(org, user.username), keys.user_ids(org)]
        self._index_org(org)
        if not self._run(
            "add_user", keys_, [user.username, user.user_id, *codec.flat_fields(user)]
        ):
            raise UserExists(user.username)

    def get_user(self, org: str, username: str) -> User | None:
        return self._user(self._hgetall(keys.user(org, username)))

    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        found = self._run("get_user_by_id", [keys.user_ids(org), keys.user_prefix(org)], [user_id])
        return self._user(codec.fields(found))

    @staticmethod
    def _user(found: codec.Fields) -> User | None:
        return codec.flat_record(User, found) if found else None

    def list_users(self, org: str) -> list[User]:
        found = self._run("list_records", [keys.users(org), keys.user_prefix(org)], [])
        return [codec.flat_record(User, codec.fields(flat)) for flat in found]

    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        changes = codec.pairs(
            {
                "role": role,
                "disabled": None if disabled is None else "1" if disabled else "0",
                "password_hash": password_hash,
                "updated_at": self._now(),
            }
        )
        found = self._run("update_record", [keys.user(org, username)], changes)
        if not found:
            raise UserNotFound(username)
        return codec.flat_record(User, codec.fields(found))

    # -- signing keys

    def signing_keys(self) -> list[SigningKey]:
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.lrange(keys.SIGNING_ORDER, 0, -1)
            pipe.hgetall(keys.SIGNING_KEYS)
            kids, by_kid = pipe.execute()
        return [codec.signing_key(by_kid[kid]) for kid in kids if kid in by_kid]

    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        signing = [keys.SIGNING_ORDER, keys.SIGNING_KEYS]
        found = self._run(
            "ensure_signing_key", signing, [candidate.kid, codec.signing_key_value(candidate)]
        )
        return codec.signing_key(found)

    def add_signing_key(self, key: SigningKey) -> None:
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.rpush(keys.SIGNING_ORDER, key.kid)
            pipe.hset(keys.SIGNING_KEYS, key.kid, codec.signing_key_value(key))
            pipe.execute()

    def remove_signing_key(self, kid: str) -> None:
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.lrem(keys.SIGNING_ORDER, 0, kid)
            pipe.hdel(keys.SIGNING_KEYS, kid)
            pipe.execute()

    # -- session secret

    def ensure_session_secret(self, candidate: str) -> str:
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.set(keys.SESSION_SECRET, candidate, nx=True)
            pipe.get(keys.SESSION_SECRET)
            _, kept = pipe.execute()
        return str(kept)
