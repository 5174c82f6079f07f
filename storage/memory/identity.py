"""API keys, users, signing keys and the console's session secret in memory."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from storage.errors import ApiKeyExists, ApiKeyNotFound, UserExists, UserNotFound
from storage.identity_records import ApiKey, SigningKey, User
from storage.interface import IdentityStore
from storage.memory.core import MemoryCore
from storage.memory.state import OrgState


class MemoryIdentity(MemoryCore, IdentityStore):
    """API keys, users, signing keys and the session secret."""

    # -- orgs and API keys

    def org_exists(self, org: str) -> bool:
        with self._lock:
            org_state = self._orgs.get(org)
            return bool(org_state and (org_state.keys or org_state.users))

    def add_api_key(self, key: ApiKey) -> None:
        with self._lock:
            keys = self._orgs.setdefault(key.org, OrgState()).keys
            if key.client_id in keys:
                raise ApiKeyExists(key.client_id)
            keys[key.client_id] = key

    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return org_state.keys.get(client_id) if org_state else None

    def list_api_keys(self, org: str) -> list[ApiKey]:
        with self._lock:
            org_state = self._orgs.get(org)
            return list(org_state.keys.values()) if org_state else []

    def _change_api_key(self, org: str, client_id: str, **changes: Any) -> ApiKey:
        with self._lock:
            org_state = self._orgs.get(org)
            key = org_state.keys.get(client_id) if org_state else None
            if org_state is None or key is None:
                raise ApiKeyNotFound(client_id)
            org_state.keys[client_id] = key = replace(key, **changes)
            return key

    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        return self._change_api_key(org, client_id, revoked=True)

    def set_api_key_secret(self, org: str, client_id: str, secret_hash: str) -> ApiKey:
        return self._change_api_key(org, client_id, secret_hash=secret_hash)

    # -- users

    def add_user(self, user: User) -> None:
        with self._lock:
            org_state = self._orgs.setdefault(user.org, OrgState())
            if user.username in org_state.users:
                raise UserExists(user.username)
            org_state.users[user.username] = user
            org_state.user_ids[user.user_id] = user.username

    def get_user(self, org: str, username: str) -> User | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return org_state.users.get(username) if org_state else None

    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        with self._lock:
            org_state = self._orgs.get(org)
            username = org_state.user_ids.get(user_id) if org_state else None
            return org_state.users[username] if org_state and username is not None else None

    def list_users(self, org: str) -> list[User]:
        with self._lock:
            org_state = self._orgs.get(org)
            return list(org_state.users.values()) if org_state else []

    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            user = org_state.users.get(username) if org_state else None
            if org_state is None or user is None:
                raise UserNotFound(username)
            user = replace(
                user,
                role=user.role if role is None else role,
                disabled=user.disabled if disabled is None else disabled,
                password_hash=user.password_hash if password_hash is None else password_hash,
                updated_at=now,
            )
            org_state.users[username] = user
            return user

    # -- signing keys

    def signing_keys(self) -> list[SigningKey]:
        with self._lock:
            return list(self._signing)

    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        with self._lock:
            if not self._signing:
                self._signing.append(candidate)
            return self._signing[-1]

    def add_signing_key(self, key: SigningKey) -> None:
        with self._lock:
            self._signing.append(key)

    def remove_signing_key(self, kid: str) -> None:
        with self._lock:
            self._signing = [k for k in self._signing if k.kid != kid]

    # -- session secret

    def ensure_session_secret(self, candidate: str) -> str:
        with self._lock:
            if self._session_secret is None:
                self._session_secret = candidate
            return self._session_secret
