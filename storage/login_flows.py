"""The login flows' rules, written once over three primitives each backend gives
(storage/memory/login.py, storage/sql/identity.py, storage/redis/login.py).

A flow record is absent once its ``expires_at`` (storage clock) has passed. What must
happen once is one atomic primitive: adding a record unless its key or unique field is
taken, and changing or deleting one record only if its fields are as expected. So a
code is taken once, a device decided once, and of concurrent rotations of one refresh
token exactly one marks it used; the others find it used and revoke the family.
A family's tokens die with it and with its session (checked on every read), so ending
a session needs no index of its families.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from storage.errors import (
    DeviceAlreadyDecided,
    DeviceCodeExists,
    RefreshTokenReused,
    SessionNotFound,
)
from storage.interface import IdentityStore
from storage.login_records import (
    AuthorizationCode,
    DeviceAuthorization,
    RealmSession,
    RefreshFamily,
    RefreshToken,
)


class FlowRecord(Protocol):
    @property
    def org(self) -> str: ...
    @property
    def expires_at(self) -> datetime: ...


R = TypeVar("R", bound=FlowRecord)
T = TypeVar("T")


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One kind of record (a flow's, or storage/identity_front.py's): ``name`` (its
    table or key segment), the field naming a record in its org, and another field
    unique in the org, if any."""

    name: str
    record: type[T]
    key: str
    unique: str | None = None


CODES = Kind("code", AuthorizationCode, "code_hash")
DEVICES = Kind("device", DeviceAuthorization, "device_code_hash", unique="user_code")
SESSIONS = Kind("session", RealmSession, "session_id")
TOKENS = Kind("refresh", RefreshToken, "token_hash")
FAMILIES = Kind("family", RefreshFamily, "family_id")
KINDS: tuple[Kind[Any], ...] = (CODES, DEVICES, SESSIONS, TOKENS, FAMILIES)

# Backends drop every expired flow record every this many flow writes, so records
# nobody asks for again (abandoned logins) cannot pile up.
SWEEP_EVERY = 512


class LoginFlows(IdentityStore):
    # -- the primitives

    @abc.abstractmethod
    def _flow_add(self, kind: Kind[R], record: R, *, only_new: bool = False) -> bool:
        """Keep ``record`` until its ``expires_at``, in place of any with its key. With
        ``only_new``: only when no live record has its key or unique value (else False)."""

    @abc.abstractmethod
    def _flow_get(
        self, kind: Kind[R], org: str, value: str, *, by_unique: bool = False
    ) -> R | None:
        """The live record with this key (``by_unique``: this unique value)."""

    @abc.abstractmethod
    def _flow_change(
        self,
        kind: Kind[R],
        org: str,
        key: str,
        *,
        expect: Mapping[str, object] | None = None,
        changes: Mapping[str, object] | None = None,
        delete: bool = False,
    ) -> tuple[R | None, bool]:
        """In one atomic step: the live record as it was (None when absent) and whether
        its fields matched ``expect``, in which case ``changes`` were made (a new
        ``expires_at`` moves its expiry) or, with ``delete``, it was deleted."""

    # -- authorization codes

    def add_authorization_code(self, code: AuthorizationCode) -> None:
        self._flow_add(CODES, code)

    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        return self._flow_change(CODES, org, code_hash, delete=True)[0]

    # -- device authorizations

    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        if not self._flow_add(DEVICES, device, only_new=True):
            raise DeviceCodeExists("device code or user code in use")

    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        return self._flow_get(DEVICES, org, device_code_hash)

    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        return self._flow_get(DEVICES, org, user_code, by_unique=True)

    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        device = self.get_device_authorization_by_user_code(org, user_code)
        if device is None:
            return None
        changes = {"status": "approved" if approved else "denied", "user_id": user_id}
        if session_id is not None:
            changes["session_id"] = session_id
        before, decided = self._flow_change(
            DEVICES, org, device.device_code_hash, expect={"status": "pending"}, changes=changes
        )
        if before is None:
            return None
        if not decided:
            raise DeviceAlreadyDecided(f"device authorization is {before.status} already")
        return replace(before, **changes)  # type: ignore[arg-type]

    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        changes = {"last_polled_at": self.clock()}
        return self._flow_change(DEVICES, org, device_code_hash, changes=changes)[0]

    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        approved = {"status": "approved"}
        device, taken = self._flow_change(
            DEVICES, org, device_code_hash, expect=approved, delete=True
        )
        return device if taken else None

    # -- realm sessions

    def add_session(self, session: RealmSession) -> None:
        self._flow_add(SESSIONS, session)

    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        return self._flow_get(SESSIONS, org, session_id)

    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        return self._flow_change(SESSIONS, org, session_id, delete=True)[0]

    # -- refresh token families

    def start_refresh_family(self, token: RefreshToken) -> None:
        session_id = token.session_id
        if session_id is not None and self.get_session(token.org, session_id) is None:
            raise SessionNotFound(f"session {session_id} has ended")
        family = RefreshFamily(token.org, token.family_id, session_id, token.expires_at)
        self._flow_add(FAMILIES, family)
        self._flow_add(TOKENS, replace(token, used=False))

    def _live_token(self, org: str, token_hash: str) -> tuple[RefreshToken, RefreshFamily] | None:
        token = self._flow_get(TOKENS, org, token_hash)
        family = None if token is None else self._flow_get(FAMILIES, org, token.family_id)
        if token is None or family is None:
            return None
        if token.session_id is not None and self.get_session(org, token.session_id) is None:
            return None
        return token, family

    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        found = self._live_token(org, token_hash)
        return None if found is None else found[0]

    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        found = self._live_token(org, token_hash)
        if found is None:
            return None
        token, family = found
        unused = {"used": False}
        before, fresh = self._flow_change(
            TOKENS, org, token_hash, expect=unused, changes={"used": True}
        )
        if before is None:
            return None
        if not fresh:
            self.revoke_refresh_family(org, token.family_id)
            raise RefreshTokenReused(token.family_id)
        successor = replace(
            token,
            token_hash=new_token_hash,
            scope=token.scope if scope is None else scope,
            issued_at=self.clock(),
            expires_at=expires_at,
        )
        self._flow_add(TOKENS, successor)
        if expires_at > family.expires_at:
            # Only if it still lives: a family revoked meanwhile stays revoked.
            changes = {"expires_at": expires_at}
            self._flow_change(FAMILIES, org, family.family_id, changes=changes)
        return successor

    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        self._flow_change(FAMILIES, org, family_id, delete=True)
