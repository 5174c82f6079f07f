"""The state of people's sign-in: realm sessions, refresh token families, and what a
signed-in person is to the OAuth flows.

Everything a browser or client presents as a secret (the session cookie, authorization
codes, device codes, refresh tokens) carries 256 random bits and is kept in storage only
as its digest (:func:`identity.secrets.lookup_digest`), so a copy of storage holds
nothing that can be presented. A realm session's id is the digest of its cookie: tokens
carry it as ``sid`` without giving away the cookie. Expiry times are on the storage
clock, which is what storage expires records by.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from identity.clients import PUBLIC_CLIENT_IDS
from identity.keys import REGISTERED_PREFIX
from identity.principal import Principal
from identity.roles import ROLES, role_includes
from identity.secrets import generate_secret, lookup_digest
from storage import RealmSession, RefreshToken, SessionNotFound, Storage, User


@dataclass(frozen=True, slots=True)
class Lifetimes:
    """How long each piece of sign-in state lives, in seconds.

    Keycloak's defaults: a realm session (what the login cookie stands for) lasts
    ``session`` at most; a refresh token ``refresh`` from its issue (each refresh gives
    a new one, never beyond the session's end); an authorization code ``code``; a
    device authorization ``device``, polled no faster than every ``device_interval``.
    """

    session: int = 10 * 3600
    refresh: int = 30 * 60
    code: int = 60
    device: int = 600
    device_interval: int = 5

    def __post_init__(self) -> None:
        for name in ("session", "refresh", "code", "device", "device_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} lifetime must be at least 1 second")


@dataclass(frozen=True, slots=True)
class Person:
    """A signed-in person as Authlib's "user": the user record and the realm session
    the sign-in belongs to (None for none)."""

    user: User
    session_id: str | None
    auth_time: datetime
    nonce: str | None = None
    # A refresh token already issued for this token response (a rotation's successor);
    # None lets the token generator start a new family.
    refresh: IssuedRefresh | None = None


@dataclass(frozen=True, slots=True)
class IssuedRefresh:
    token: str
    expires_at: datetime


def is_person_client(client_id: object) -> bool:
    """A client people sign in with: built in, or registered (identity.registration)."""
    return client_id in PUBLIC_CLIENT_IDS or (
        isinstance(client_id, str) and client_id.startswith(REGISTERED_PREFIX)
    )


def acting_person(storage: Storage, principal: Principal) -> str | None:
    """The person (user id) a request counts as: a signed-in user, or the owner of the
    key whose token it carries (None for a key nobody owns)."""
    if is_person_client(principal.client_id):
        return principal.user_id
    key = storage.get_api_key(principal.org, principal.client_id)
    if key is None or key.user_id != principal.user_id:
        return principal.user_id  # not a key's token: a person's, by another client
    return key.owner


def can_sign_in(user: User | None) -> bool:
    """True for an enabled user with a role the service knows."""
    return user is not None and not user.disabled and user.role in ROLES


def standing(storage: Storage, principal: Principal) -> Principal | None:
    """A person's principal as their user stands in storage now: None when the user is
    gone or disabled, and never a higher role than the user has now (a token carries
    the role it was issued with until it expires). A key's principal is returned as
    it is."""
    if not is_person_client(principal.client_id):
        return principal
    user = storage.get_user_by_id(principal.org, principal.user_id)
    if user is None or not can_sign_in(user):
        return None
    if user.role != principal.role and role_includes(principal.role, user.role):
        return replace(principal, role=user.role)
    return principal


# --------------------------------------------------------------------------- sessions


def start_session(storage: Storage, user: User, lifetimes: Lifetimes) -> tuple[str, RealmSession]:
    """A new realm session for ``user``; returns the cookie value with the record."""
    cookie = generate_secret()
    now = storage.clock()
    session = RealmSession(
        org=user.org,
        session_id=lookup_digest(cookie),
        user_id=user.user_id,
        created_at=now,
        expires_at=now + timedelta(seconds=lifetimes.session),
    )
    storage.add_session(session)
    return cookie, session


def session_user(
    storage: Storage, org: str, cookie: str | None
) -> tuple[RealmSession, User] | None:
    """The live session the cookie stands for and its user, who may still sign in."""
    if not cookie or len(cookie) > 128:
        return None
    session = storage.get_session(org, lookup_digest(cookie))
    if session is None:
        return None
    user = storage.get_user_by_id(org, session.user_id)
    return (session, user) if user is not None and can_sign_in(user) else None


# --------------------------------------------------------------------------- refresh tokens


def start_refresh(
    storage: Storage, person: Person, client_id: str, scope: str, lifetimes: Lifetimes
) -> IssuedRefresh:
    """The first refresh token of a new family (one per sign-in of a client).

    Raises SessionNotFound when the person's session has ended meanwhile.
    """
    token = generate_secret()
    now = storage.clock()
    expires_at = _refresh_expiry(storage, person.user.org, person.session_id, now, lifetimes)
    storage.start_refresh_family(
        RefreshToken(
            org=person.user.org,
            token_hash=lookup_digest(token),
            family_id=str(uuid.uuid4()),
            client_id=client_id,
            user_id=person.user.user_id,
            scope=scope,
            session_id=person.session_id,
            issued_at=now,
            expires_at=expires_at,
        )
    )
    return IssuedRefresh(token, expires_at)


def rotate_refresh(
    storage: Storage, presented: RefreshToken, lifetimes: Lifetimes
) -> IssuedRefresh | None:
    """Replace ``presented`` by a new token of its family, in one storage step.

    None when it is gone meanwhile; storage raises RefreshTokenReused (having revoked
    the family) when another request rotated it first.
    """
    token = generate_secret()
    now = storage.clock()
    try:
        expires_at = _refresh_expiry(storage, presented.org, presented.session_id, now, lifetimes)
    except SessionNotFound:
        return None
    successor = storage.rotate_refresh_token(
        presented.org, presented.token_hash, lookup_digest(token), expires_at
    )
    return IssuedRefresh(token, expires_at) if successor is not None else None


def _refresh_expiry(
    storage: Storage, org: str, session_id: str | None, now: datetime, lifetimes: Lifetimes
) -> datetime:
    expires_at = now + timedelta(seconds=lifetimes.refresh)
    if session_id is None:
        return expires_at
    session = storage.get_session(org, session_id)
    if session is None:
        raise SessionNotFound("the session has ended")
    return min(expires_at, session.expires_at)


def seconds_until(storage: Storage, moment: datetime) -> int:
    return max(0, round((moment - storage.clock()).total_seconds()))
