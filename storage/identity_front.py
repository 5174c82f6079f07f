"""API keys, users, signing keys and the console's session secret: their rules written
once over each backend's primitives (storage/{memory,sql,redis}/identity.py), as
storage/login_flows.py does for the login flows.

What must happen once is one atomic primitive: adding a record unless its key is taken
(of two users with one username, one wins), changing a record's fields in one step, and
appending a signing key only when none is kept (of workers starting at once, one
candidate wins and all get it back).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TypeVar

from storage.errors import ApiKeyExists, ApiKeyNotFound, UserExists, UserNotFound
from storage.identity_records import ApiKey, SigningKey, User
from storage.interface import IdentityStore
from storage.login_flows import Kind

API_KEYS = Kind("key", ApiKey, "client_id")
USERS = Kind("user", User, "username", unique="user_id")  # user ids are uuids
RECORD_KINDS: tuple[Kind[Any], ...] = (API_KEYS, USERS)

Rec = TypeVar("Rec", ApiKey, User)


class IdentityFront(IdentityStore):
    # -- the primitives

    @abc.abstractmethod
    def _record_add(self, kind: Kind[Rec], record: Rec) -> bool:
        """Store a new record, in one step unless its key is taken in its org (False)."""

    @abc.abstractmethod
    def _record_get(
        self, kind: Kind[Rec], org: str, value: str, *, by_unique: bool = False
    ) -> Rec | None:
        """The record with this key (``by_unique``: this unique value)."""

    @abc.abstractmethod
    def _record_list(self, kind: Kind[Rec], org: str) -> list[Rec]:
        """Every record of the kind in the org, oldest first."""

    @abc.abstractmethod
    def _record_change(
        self, kind: Kind[Rec], org: str, key: str, changes: Mapping[str, object]
    ) -> Rec | None:
        """In one step: set ``changes`` on the record; it as it was, None when absent."""

    def _has_records(self, kind: Kind[Any], org: str) -> bool:
        """Whether the org has a record of the kind (a backend may ask more cheaply)."""
        return bool(self._record_list(kind, org))

    @abc.abstractmethod
    def _add_signing_key(self, key: SigningKey, *, only_first: bool) -> SigningKey:
        """In one step: append ``key`` (``only_first``: only when none is kept); return
        the newest key."""

    # -- the rules

    def org_exists(self, org: str) -> bool:
        return any(self._has_records(kind, org) for kind in RECORD_KINDS)

    def add_api_key(self, key: ApiKey) -> None:
        if not self._record_add(API_KEYS, key):
            raise ApiKeyExists(key.client_id)

    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        return self._record_get(API_KEYS, org, client_id)

    def list_api_keys(self, org: str) -> list[ApiKey]:
        return self._record_list(API_KEYS, org)

    def _changed(
        self, kind: Kind[Rec], org: str, key: str, changes: Mapping[str, object]
    ) -> Rec | None:
        before = self._record_change(kind, org, key, changes)
        return None if before is None else replace(before, **changes)  # type: ignore[arg-type]

    def _change_api_key(self, org: str, client_id: str, **changes: object) -> ApiKey:
        key = self._changed(API_KEYS, org, client_id, changes)
        if key is None:
            raise ApiKeyNotFound(client_id)
        return key

    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        return self._change_api_key(org, client_id, revoked=True)

    def set_api_key_secret(self, org: str, client_id: str, secret_hash: str) -> ApiKey:
        return self._change_api_key(org, client_id, secret_hash=secret_hash)

    def add_user(self, user: User) -> None:
        if not self._record_add(USERS, user):
            raise UserExists(user.username)

    def get_user(self, org: str, username: str) -> User | None:
        return self._record_get(USERS, org, username)

    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        return self._record_get(USERS, org, user_id, by_unique=True)

    def list_users(self, org: str) -> list[User]:
        return self._record_list(USERS, org)

    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        # Only these three and the time; a username and a user id never change.
        given = {"role": role, "disabled": disabled, "password_hash": password_hash}
        changes = {k: v for k, v in given.items() if v is not None}
        user = self._changed(USERS, org, username, {**changes, "updated_at": self.clock()})
        if user is None:
            raise UserNotFound(username)
        return user

    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        return self._add_signing_key(candidate, only_first=True)

    def add_signing_key(self, key: SigningKey) -> None:
        self._add_signing_key(key, only_first=False)
