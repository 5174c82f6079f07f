"""The state of the login flows in memory: codes, devices, sessions, refresh tokens."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from storage.errors import (
    DeviceAlreadyDecided,
    DeviceCodeExists,
    RefreshTokenReused,
    SessionNotFound,
)
from storage.interface import IdentityStore
from storage.login_records import AuthorizationCode, DeviceAuthorization, RealmSession, RefreshToken
from storage.memory.core import MemoryCore
from storage.memory.state import SWEEP_EVERY, Family, OrgState, live


class MemoryLogin(MemoryCore, IdentityStore):
    """Login flow state; each record is absent once its ``expires_at`` has passed."""

    # -- login flow state (helpers: call with the lock held)

    def _flow(self, org: str) -> OrgState:
        """The org's state, for a write that adds a flow record."""
        self._added()
        return self._orgs.setdefault(org, OrgState())

    def _added(self) -> None:
        self._flow_writes += 1
        if self._flow_writes % SWEEP_EVERY == 0:
            self._sweep(self.clock())

    def _sweep(self, now: datetime) -> None:
        for state in self._orgs.values():
            for records in (state.codes, state.sessions, state.tokens, state.families):
                for key in [k for k, r in records.items() if r.expires_at <= now]:
                    del records[key]
            for device in [d for d in state.devices.values() if d.expires_at <= now]:
                self._drop_device(state, device)
            for sid in [s for s in state.session_families if s not in state.sessions]:
                del state.session_families[sid]

    def add_authorization_code(self, code: AuthorizationCode) -> None:
        with self._lock:
            self._flow(code.org).codes[code.code_hash] = code

    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None or live(org_state.codes, code_hash, now) is None:
                return None
            return org_state.codes.pop(code_hash)

    # Device authorizations: ``devices`` by device code digest, ``user_codes`` points a
    # user code at its device code digest; both go together.

    def _device(self, org_state: OrgState, device_code_hash: str) -> DeviceAuthorization | None:
        device = org_state.devices.get(device_code_hash)
        if device is not None and device.expires_at <= self.clock():
            self._drop_device(org_state, device)
            return None
        return device

    @staticmethod
    def _drop_device(org_state: OrgState, device: DeviceAuthorization) -> None:
        del org_state.devices[device.device_code_hash]
        if org_state.user_codes.get(device.user_code) == device.device_code_hash:
            del org_state.user_codes[device.user_code]

    def _by_user_code(self, org: str, user_code: str) -> DeviceAuthorization | None:
        org_state = self._orgs.get(org)
        device_code_hash = org_state.user_codes.get(user_code) if org_state else None
        if org_state is None or device_code_hash is None:
            return None
        return self._device(org_state, device_code_hash)

    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        with self._lock:
            org_state = self._flow(device.org)
            taken = self._by_user_code(device.org, device.user_code) is not None
            if taken or self._device(org_state, device.device_code_hash) is not None:
                raise DeviceCodeExists("device code or user code in use")
            org_state.devices[device.device_code_hash] = device
            org_state.user_codes[device.user_code] = device.device_code_hash

    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return self._device(org_state, device_code_hash) if org_state else None

    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        with self._lock:
            return self._by_user_code(org, user_code)

    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        with self._lock:
            device = self._by_user_code(org, user_code)
            if device is None:
                return None
            if device.status != "pending":
                raise DeviceAlreadyDecided(f"device authorization is {device.status} already")
            status = "approved" if approved else "denied"
            decided = replace(device, status=status, user_id=user_id, session_id=session_id)
            self._orgs[org].devices[device.device_code_hash] = decided
            return decided

    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            device = self._device(org_state, device_code_hash) if org_state else None
            if org_state is None or device is None:
                return None
            org_state.devices[device_code_hash] = replace(device, last_polled_at=now)
            return device

    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        with self._lock:
            org_state = self._orgs.get(org)
            device = self._device(org_state, device_code_hash) if org_state else None
            if org_state is None or device is None or device.status != "approved":
                return None
            self._drop_device(org_state, device)
            return device

    # Sessions and refresh families: ``families`` holds each live family (revoking
    # drops it), ``tokens`` every token, used ones too, until it expires; a token
    # counts only while its family lives and, if it has one, its session.

    def add_session(self, session: RealmSession) -> None:
        with self._lock:
            self._flow(session.org).sessions[session.session_id] = session

    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return live(org_state.sessions, session_id, self.clock()) if org_state else None

    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None:
                return None
            session = live(org_state.sessions, session_id, self.clock())
            org_state.sessions.pop(session_id, None)
            for family_id in org_state.session_families.pop(session_id, set()):
                org_state.families.pop(family_id, None)
            return session

    def start_refresh_family(self, token: RefreshToken) -> None:
        now = self.clock()
        with self._lock:
            org_state = self._flow(token.org)
            if token.session_id is not None:
                if live(org_state.sessions, token.session_id, now) is None:
                    raise SessionNotFound(f"session {token.session_id} has ended")
                org_state.session_families.setdefault(token.session_id, set()).add(token.family_id)
            org_state.families[token.family_id] = Family(token.session_id, token.expires_at)
            org_state.tokens[token.token_hash] = replace(token, used=False)

    def _token(self, org_state: OrgState, token_hash: str) -> RefreshToken | None:
        """A token whose family (and session, if any) still lives."""
        now = self.clock()
        token = live(org_state.tokens, token_hash, now)
        if token is None or live(org_state.families, token.family_id, now) is None:
            return None
        session = token.session_id
        if session is not None and live(org_state.sessions, session, now) is None:
            return None
        return token

    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return self._token(org_state, token_hash) if org_state else None

    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            token = self._token(org_state, token_hash) if org_state else None
            if org_state is None or token is None:
                return None
            if token.used:
                del org_state.families[token.family_id]
                raise RefreshTokenReused(token.family_id)
            self._added()
            successor = replace(
                token,
                token_hash=new_token_hash,
                scope=token.scope if scope is None else scope,
                issued_at=now,
                expires_at=expires_at,
            )
            org_state.tokens[token_hash] = replace(token, used=True)
            org_state.tokens[new_token_hash] = successor
            family = org_state.families[token.family_id]
            family.expires_at = max(family.expires_at, expires_at)
            return successor

    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is not None:
                org_state.families.pop(family_id, None)
