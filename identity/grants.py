"""Authlib's grants, given our storage: what each asks of an application, and nothing
of the protocol.

* client credentials (API keys);
* authorization code with PKCE (:class:`S256Challenge`: a challenge is required and
  only S256 is accepted) and, with scope ``openid``, an ``id_token`` (OpenIDCode);
* refresh token with rotation: each use returns a new refresh token; presenting a used
  one revokes its whole family (storage does both in one atomic step);
* the device code grant (RFC 8628), for ``promptsvc-cli``.

Authorization codes are taken from storage once (read and deleted in one step), so a
code works once even when two requests race; a code whose verifier fails is spent too.
"""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import (
    AccessDeniedError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
)
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc8628 import DeviceCodeGrant, DeviceCredentialMixin
from authlib.oidc.core import OpenIDCode, OpenIDToken, UserInfo
from joserfc.jwk import RSAKey

from identity import people, scopes
from identity.clients import PublicClient
from identity.discovery import SECRET_AUTH_METHODS
from identity.errors import InvalidScope
from identity.people import Person
from identity.realm_context import RealmContext
from identity.secrets import lookup_digest
from storage import (
    AuthorizationCode,
    DeviceAuthorization,
    RefreshToken,
    RefreshTokenReused,
)

S256 = "S256"
NONE_AUTH = ["none"]
# The people grants authenticate keys too, so a key asking for one hears
# unauthorized_client (the grant is not its), not invalid_client (bad credentials).
PEOPLE_GRANT_AUTH = [*SECRET_AUTH_METHODS, "none"]
REUSED = "The refresh token was used already: every token of its sign-in is revoked"


def _server(grant: Any) -> RealmContext:
    server: RealmContext = grant.server
    return server


class ClientCredentials(grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(SECRET_AUTH_METHODS)


class S256Challenge(CodeChallenge):
    """PKCE, required at the authorization request, S256 only (``plain`` and an absent
    method, which RFC 7636 reads as ``plain``, are refused)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = [S256]
    DEFAULT_CODE_CHALLENGE_METHOD = S256

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge (S256)")
        if data.get("code_challenge_method") != S256:
            raise InvalidRequestError("code_challenge_method must be S256")
        super().validate_code_challenge(grant, redirect_uri)


class _Code:
    """A taken authorization code as Authlib's AuthorizationCodeMixin."""

    def __init__(self, record: AuthorizationCode) -> None:
        self.record = record
        self.code_challenge = record.code_challenge
        self.code_challenge_method = record.code_challenge_method

    def get_redirect_uri(self) -> str:
        return self.record.redirect_uri

    def get_scope(self) -> str:
        return self.record.scope

    def get_nonce(self) -> str | None:
        return self.record.nonce

    def get_auth_time(self) -> int:
        return int(self.record.auth_time.timestamp())

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = PEOPLE_GRANT_AUTH
    AUTHORIZATION_CODE_LENGTH = 43

    def save_authorization_code(self, code: str, request: Any) -> None:
        person: Person = request.user
        server = _server(self)
        try:
            granted = scopes.grant(person.user.role, request.scope)
        except InvalidScope as exc:
            raise InvalidScopeError(
                exc.description, redirect_uri=request.payload.redirect_uri
            ) from None
        data = request.payload.data
        storage = server.identity.storage
        storage.add_authorization_code(
            AuthorizationCode(
                org=person.user.org,
                code_hash=lookup_digest(code),
                client_id=request.client.get_client_id(),
                redirect_uri=request.payload.redirect_uri,
                scope=granted,
                user_id=person.user.user_id,
                session_id=person.session_id,
                code_challenge=data["code_challenge"],
                code_challenge_method=data["code_challenge_method"],
                nonce=data.get("nonce"),
                auth_time=person.auth_time,
                expires_at=server.expiry(server.lifetimes.code),
            )
        )

    def query_authorization_code(self, code: str, client: PublicClient) -> _Code | None:
        storage = _server(self).identity.storage
        record = storage.take_authorization_code(client.org, lookup_digest(code))
        if record is None or record.client_id != client.get_client_id():
            return None
        return _Code(record)

    def delete_authorization_code(self, authorization_code: _Code) -> None:
        return None  # taken from storage when it was looked up

    def authenticate_user(self, authorization_code: _Code) -> Person | None:
        record = authorization_code.record
        user = _server(self).identity.storage.get_user_by_id(record.org, record.user_id)
        if user is None or not people.can_sign_in(user):
            return None
        return Person(user, record.session_id, record.auth_time, record.nonce)


class _RefreshCredential:
    """A presented refresh token as Authlib's TokenMixin."""

    def __init__(self, record: RefreshToken) -> None:
        self.record = record

    def check_client(self, client: Any) -> bool:
        return bool(self.record.client_id == client.get_client_id())

    def get_scope(self) -> str:
        return self.record.scope


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = PEOPLE_GRANT_AUTH
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> _RefreshCredential | None:
        storage = _server(self).identity.storage
        org = self.request.client.org
        if len(refresh_token) > 256:
            return None
        record = storage.get_refresh_token(org, lookup_digest(refresh_token))
        if record is None:
            return None
        if record.used:  # a replay: the whole chain goes
            storage.revoke_refresh_family(org, record.family_id)
            raise InvalidGrantError(REUSED)
        return _RefreshCredential(record)

    def authenticate_user(self, refresh_token: _RefreshCredential) -> Person:
        """The person, with the rotated refresh token; done last, after every check,
        so a refused request leaves the presented token as it was."""
        server = _server(self)
        storage = server.identity.storage
        record = refresh_token.record
        user = storage.get_user_by_id(record.org, record.user_id)
        if user is None or not people.can_sign_in(user):
            raise InvalidGrantError("The user cannot sign in")
        try:
            rotated = people.rotate_refresh(storage, record, server.lifetimes)
        except RefreshTokenReused:
            raise InvalidGrantError(REUSED) from None
        if rotated is None:
            raise InvalidGrantError("The refresh token is no longer valid")
        return Person(user, record.session_id, record.issued_at, refresh=rotated)

    def revoke_old_credential(self, refresh_token: _RefreshCredential) -> None:
        return None  # the rotation marked it used


class _DeviceCredential(DeviceCredentialMixin):
    def __init__(self, record: DeviceAuthorization, expired: bool) -> None:
        self.record = record
        self.expired = expired

    def get_client_id(self) -> str:
        return self.record.client_id

    def get_scope(self) -> str:
        return self.record.scope

    def get_user_code(self) -> str:
        return self.record.user_code

    def is_expired(self) -> bool:
        return self.expired


class DeviceGrant(DeviceCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = PEOPLE_GRANT_AUTH

    def query_device_credential(self, device_code: str) -> _DeviceCredential | None:
        server = _server(self)
        org = server.current_org()
        if len(device_code) > 256:
            return None
        record = server.identity.storage.poll_device_authorization(org, lookup_digest(device_code))
        if record is None:
            return None
        self._polled = record
        return _DeviceCredential(record, expired=server.device_expired(record))

    def query_user_grant(self, user_code: str) -> tuple[Person | None, bool] | None:
        record: DeviceAuthorization = self._polled
        if record.status == "pending":
            return None
        if record.status != "approved":
            return None, False
        server = _server(self)
        storage = server.identity.storage
        user = storage.get_user_by_id(record.org, record.user_id or "")
        if user is None or not people.can_sign_in(user):
            raise AccessDeniedError()
        if storage.consume_device_authorization(record.org, record.device_code_hash) is None:
            raise InvalidGrantError("The device code was used already")
        # The device gets a session of its own: signing out in the browser that
        # approved it does not sign the device out, nor the other way round.
        _, session = people.start_session(storage, user, server.lifetimes)
        return Person(user, session.session_id, session.created_at), True

    def should_slow_down(self, credential: _DeviceCredential) -> bool:
        last = credential.record.last_polled_at
        if last is None:
            return False
        now = _server(self).identity.storage.clock()
        return (now - last).total_seconds() < credential.record.interval


class _IdTokenMixin:
    """What both id_token extensions need: our key, issuer, claims and clock."""

    server: RealmContext

    def resolve_client_private_key(self, client: PublicClient) -> RSAKey:
        return self.server.identity.keyring.snapshot().signer.jwk

    def get_encode_header(self, client: PublicClient) -> dict[str, str]:
        signer = self.server.identity.keyring.snapshot().signer
        return {"alg": "RS256", "kid": signer.record.kid}

    def get_client_algorithm(self, client: PublicClient) -> str:
        return "RS256"

    def get_client_claims(self, client: PublicClient) -> dict[str, Any]:
        identity = self.server.identity
        now = int(identity.clock())
        return {
            "iss": identity.issuer(client.org),
            "aud": client.get_client_id(),
            "azp": client.get_client_id(),
            "typ": "ID",
            "iat": now,
            "exp": now + identity.token_lifetime,
        }

    def generate_user_info(self, user: Person, scope: str) -> UserInfo:
        info = UserInfo(
            sub=user.user.user_id,
            preferred_username=user.user.username,
            org=user.user.org,
            roles=[user.user.role],
            auth_time=int(user.auth_time.timestamp()),
        )
        if user.session_id is not None:
            info["sid"] = user.session_id
        return info


class IdTokenOnCode(_IdTokenMixin, OpenIDCode):
    """``id_token`` for the authorization code grant (scope ``openid``)."""

    def __init__(self, server: RealmContext) -> None:
        super().__init__(require_nonce=False)
        self.server = server

    def exists_nonce(self, nonce: str, request: Any) -> bool:
        return False  # codes are single use; a replayed nonce cannot get a second token


class IdToken(_IdTokenMixin, OpenIDToken):
    """``id_token`` for the refresh token and device grants (scope ``openid``)."""

    def __init__(self, server: RealmContext) -> None:
        self.server = server
