"""The state of the login flows on Redis: each record a key with a TTL."""

from __future__ import annotations

from collections.abc import Sequence
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
from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore, guard
from storage.times import rfc3339


class RedisLogin(RedisCore[ClientT], IdentityStore):
    """Login flow state; each record a key that expires at its ``expires_at``."""

    # -- login flow state
    def add_authorization_code(self, code: AuthorizationCode) -> None:
        key = keys.authorization_code(code.org, code.code_hash)
        args = [self._ttl_ms(code.expires_at), *codec.flat_fields(code)]
        self._run("add_expiring", [key], args)

    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        found = self._run("take_authorization_code", [keys.authorization_code(org, code_hash)], [])
        return codec.flat_record(AuthorizationCode, codec.fields(found)) if found else None

    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        org = device.org
        keys_ = [keys.device(org, device.device_code_hash), keys.user_code(org, device.user_code)]
        args = [self._ttl_ms(device.expires_at), device.device_code_hash]
        args += codec.flat_fields(device)
        if not self._run("add_device_authorization", keys_, args):
            raise DeviceCodeExists("device code or user code in use")

    @staticmethod
    def _device(found: Sequence[str]) -> DeviceAuthorization | None:
        return codec.flat_record(DeviceAuthorization, codec.fields(found)) if found else None

    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        found = self._hgetall(keys.device(org, device_code_hash))
        return codec.flat_record(DeviceAuthorization, found) if found else None

    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        keys_ = [keys.user_code(org, user_code), keys.device_prefix(org)]
        return self._device(self._run("get_device_authorization_by_user_code", keys_, []))

    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        keys_ = [keys.user_code(org, user_code), keys.device_prefix(org)]
        args = ["approved" if approved else "denied", user_id, session_id or ""]
        reply = self._run("decide_device_authorization", keys_, args)
        if reply[0] == "decided":
            raise DeviceAlreadyDecided(f"device authorization is {reply[1]} already")
        return self._device(reply[1]) if reply[0] == "ok" else None

    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        key = keys.device(org, device_code_hash)
        return self._device(self._run("poll_device_authorization", [key], [self._now()]))

    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        keys_ = [keys.device(org, device_code_hash), keys.user_code_prefix(org)]
        return self._device(self._run("consume_device_authorization", keys_, []))

    def add_session(self, session: RealmSession) -> None:
        key = keys.session(session.org, session.session_id)
        args = [self._ttl_ms(session.expires_at), *codec.flat_fields(session)]
        self._run("add_expiring", [key], args)

    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        found = self._hgetall(keys.session(org, session_id))
        return codec.flat_record(RealmSession, found) if found else None

    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        keys_ = [
            keys.session(org, session_id),
            keys.session_families(org, session_id),
            keys.family_prefix(org),
        ]
        found = self._run("end_session", keys_, [])
        return codec.flat_record(RealmSession, codec.fields(found)) if found else None

    def start_refresh_family(self, token: RefreshToken) -> None:
        org, session_id = token.org, token.session_id or ""
        keys_ = [
            keys.refresh_token(org, token.token_hash),
            keys.family(org, token.family_id),
            keys.session(org, session_id),
            keys.session_families(org, session_id),
        ]
        args = [self._ttl_ms(token.expires_at), token.family_id, session_id]
        fields = codec.flat_fields(replace(token, used=False))
        if not self._run("start_refresh_family", keys_, [*args, *fields]):
            raise SessionNotFound(f"session {session_id} has ended")

    def _refresh_keys(self, org: str, token_hash: str) -> list[str]:
        """KEYS[1..3] of the refresh token scripts (storage/redis/lua/_refresh.lua)."""
        return [
            keys.refresh_token(org, token_hash),
            keys.family_prefix(org),
            keys.session_prefix(org),
        ]

    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        found = self._run("get_refresh_token", self._refresh_keys(org, token_hash), [])
        return codec.flat_record(RefreshToken, codec.fields(found)) if found else None

    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        keys_ = [*self._refresh_keys(org, token_hash), keys.refresh_token(org, new_token_hash)]
        args = [
            new_token_hash,
            self._now(),
            rfc3339(expires_at),
            self._ttl_ms(expires_at),
            "0" if scope is None else "1",
            scope or "",
        ]
        reply = self._run("rotate_refresh_token", keys_, args)
        if reply[0] == "reused":
            raise RefreshTokenReused(reply[1])
        return codec.flat_record(RefreshToken, codec.fields(reply[1])) if reply[0] == "ok" else None

    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        with guard():
            self.client.delete(keys.family(org, family_id))
