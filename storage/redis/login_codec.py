"""People's sign-in records <-> the flat field lists Redis hashes hold (see
storage.redis.codec, whose helpers these use): authorization codes, device
authorizations, realm sessions and refresh tokens.
"""

from __future__ import annotations

from storage.login_records import AuthorizationCode, DeviceAuthorization, RealmSession, RefreshToken
from storage.redis.codec import Fields, _flag, _optional_time, _time, pairs
from storage.times import rfc3339


def authorization_code_fields(c: AuthorizationCode) -> list[str]:
    return pairs(
        {
            "org": c.org,
            "code_hash": c.code_hash,
            "client_id": c.client_id,
            "redirect_uri": c.redirect_uri,
            "scope": c.scope,
            "user_id": c.user_id,
            "session_id": c.session_id,
            "code_challenge": c.code_challenge,
            "code_challenge_method": c.code_challenge_method,
            "nonce": c.nonce,
            "auth_time": rfc3339(c.auth_time),
            "expires_at": rfc3339(c.expires_at),
        }
    )


def authorization_code(f: Fields) -> AuthorizationCode:
    return AuthorizationCode(
        org=f["org"],
        code_hash=f["code_hash"],
        client_id=f["client_id"],
        redirect_uri=f["redirect_uri"],
        scope=f["scope"],
        user_id=f["user_id"],
        session_id=f.get("session_id"),
        code_challenge=f["code_challenge"],
        code_challenge_method=f["code_challenge_method"],
        nonce=f.get("nonce"),
        auth_time=_time(f["auth_time"]),
        expires_at=_time(f["expires_at"]),
    )


def device_fields(d: DeviceAuthorization) -> list[str]:
    return pairs(
        {
            "org": d.org,
            "device_code_hash": d.device_code_hash,
            "user_code": d.user_code,
            "client_id": d.client_id,
            "scope": d.scope,
            "interval": str(d.interval),
            "created_at": rfc3339(d.created_at),
            "expires_at": rfc3339(d.expires_at),
            "status": d.status,
            "user_id": d.user_id,
            "session_id": d.session_id,
            "last_polled_at": rfc3339(d.last_polled_at) if d.last_polled_at else None,
        }
    )


def device(f: Fields) -> DeviceAuthorization:
    return DeviceAuthorization(
        org=f["org"],
        device_code_hash=f["device_code_hash"],
        user_code=f["user_code"],
        client_id=f["client_id"],
        scope=f["scope"],
        interval=int(f["interval"]),
        created_at=_time(f["created_at"]),
        expires_at=_time(f["expires_at"]),
        status=f["status"],
        user_id=f.get("user_id"),
        session_id=f.get("session_id"),
        last_polled_at=_optional_time(f.get("last_polled_at")),
    )


def session_fields(s: RealmSession) -> list[str]:
    return pairs(
        {
            "org": s.org,
            "session_id": s.session_id,
            "user_id": s.user_id,
            "created_at": rfc3339(s.created_at),
            "expires_at": rfc3339(s.expires_at),
        }
    )


def session(f: Fields) -> RealmSession:
    return RealmSession(
        org=f["org"],
        session_id=f["session_id"],
        user_id=f["user_id"],
        created_at=_time(f["created_at"]),
        expires_at=_time(f["expires_at"]),
    )


def refresh_token_fields(t: RefreshToken) -> list[str]:
    return pairs(
        {
            "org": t.org,
            "token_hash": t.token_hash,
            "family_id": t.family_id,
            "client_id": t.client_id,
            "user_id": t.user_id,
            "scope": t.scope,
            "session_id": t.session_id,
            "issued_at": rfc3339(t.issued_at),
            "expires_at": rfc3339(t.expires_at),
            "used": _flag(t.used),
        }
    )


def refresh_token(f: Fields) -> RefreshToken:
    return RefreshToken(
        org=f["org"],
        token_hash=f["token_hash"],
        family_id=f["family_id"],
        client_id=f["client_id"],
        user_id=f["user_id"],
        scope=f["scope"],
        session_id=f.get("session_id"),
        issued_at=_time(f["issued_at"]),
        expires_at=_time(f["expires_at"]),
        used=f["used"] == "1",
    )
