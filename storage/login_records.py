"""The records of people's sign-in that storage keeps for identity: authorization codes,
device authorizations, realm sessions and refresh tokens. None is shown to clients
as it is, so none has a ``to_json()`` (storage.records has the ones that are).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class AuthorizationCode:
    """An authorization code (single use, short-lived): what the token request needs
    to check and to issue tokens."""

    org: str
    code_hash: str  # digest of the code the client holds
    client_id: str
    redirect_uri: str
    scope: str
    user_id: str
    session_id: str | None  # the realm session the login made
    code_challenge: str
    code_challenge_method: str
    nonce: str | None
    auth_time: datetime  # when the person authenticated
    expires_at: datetime


DEVICE_STATUSES: tuple[str, ...] = ("pending", "approved", "denied")


@dataclass(frozen=True, slots=True)
class DeviceAuthorization:
    """A device authorization request (RFC 8628) and how the person answered it."""

    org: str
    device_code_hash: str  # digest of the device code the client polls with
    user_code: str  # what the person types on the verification page (as normalized)
    client_id: str
    scope: str
    interval: int  # seconds the client is told to wait between polls
    created_at: datetime
    expires_at: datetime
    status: str = "pending"  # one of DEVICE_STATUSES
    user_id: str | None = None  # who approved or denied
    session_id: str | None = None  # the approving person's realm session
    last_polled_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RealmSession:
    """A person signed in to a realm: what the login page's cookie points at."""

    org: str
    session_id: str
    user_id: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class RefreshToken:
    """One refresh token of a family (the chain of rotations that began at one login)."""

    org: str
    token_hash: str  # digest of the token the client holds
    family_id: str
    client_id: str
    user_id: str
    scope: str
    session_id: str | None  # the family ends with this session (None: it has none)
    issued_at: datetime
    expires_at: datetime
    used: bool = False  # rotated already; presenting it again is a replay


@dataclass(frozen=True, slots=True)
class RefreshFamily:
    """The refresh tokens of one login: alive while this record is (revoking deletes it),
    and with its session, if it has one."""

    org: str
    family_id: str
    session_id: str | None
    expires_at: datetime  # that of its newest token
