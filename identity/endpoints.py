"""Authlib's non-grant endpoints, given our storage: introspection (RFC 7662), revocation
(RFC 7009), device authorization (RFC 8628), RP-initiated logout and userinfo (OpenID
Connect).

A token *stands* while what issued it still does: a key's token while the key is not
revoked; a person's while their realm session lives and they may still sign in.
Introspection and userinfo answer by that; the API itself only checks signatures and
``exp`` (a revoked key's or signed-out person's access token works there until it
expires, minutes later).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from authlib.integrations.flask_oauth2 import ResourceProtector
from authlib.oauth2.rfc6749.errors import (
    InvalidRequestError,
    InvalidScopeError,
    MissingAuthorizationError,
    UnauthorizedClientError,
    UnsupportedTokenTypeError,
)
from authlib.oauth2.rfc6750 import BearerTokenValidator, InvalidTokenError
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint
from authlib.oidc.core import UserInfo, UserInfoEndpoint
from authlib.oidc.rpinitiated import EndSessionEndpoint, EndSessionRequest

from identity import keys, people, tokens
from identity.clients import KeyClient, PublicClient
from identity.discovery import DEVICE_CODE, DEVICE_PAGE_PATH, SECRET_AUTH_METHODS
from identity.errors import InvalidToken
from identity.grants import NONE_AUTH
from identity.realm_context import RealmContext
from identity.secrets import lookup_digest
from storage import DeviceAuthorization, DeviceCodeExists, RefreshToken

ALL_AUTH_METHODS = [*SECRET_AUTH_METHODS, "none"]
# Device records outlive their codes a little, so a late poll hears expired_token.
DEVICE_GRACE = timedelta(minutes=5)
_USER_CODE = re.compile(r"[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}")


def normalize_user_code(typed: str) -> str | None:
    """A user code as people type it (any case, with or without the dash or spaces)
    in its stored form ``XXXX-XXXX``; None when it cannot be one."""
    letters = re.sub(r"[\s-]", "", typed[:32]).upper()
    code = f"{letters[:4]}-{letters[4:]}"
    return code if _USER_CODE.fullmatch(code) else None


def token_stands(server: RealmContext, claims: dict[str, Any]) -> bool:
    """Whether what issued a verified access token still stands (module docstring)."""
    storage = server.identity.storage
    org, client_id = claims["org"], claims["azp"]
    if not people.is_person_client(client_id):
        return keys.active_key(storage, org, client_id) is not None
    session_id = claims.get("sid")
    if not isinstance(session_id, str) or storage.get_session(org, session_id) is None:
        return False
    return people.can_sign_in(storage.get_user_by_id(org, claims["sub"]))


def verified_claims(server: RealmContext, token: str) -> dict[str, Any] | None:
    """The claims of an access token of the request's realm, None if it is not one."""
    if not isinstance(token, str) or token.count(".") != 2:
        return None
    try:
        server.identity.verify_token(token)
    except InvalidToken:
        return None
    claims = tokens.payload(token)
    return claims if claims.get("org") == server.current_org() else None


class UnsupportedTokenHint(UnsupportedTokenTypeError):
    """RFC 7009 2.2.1 answers an unsupported ``token_type_hint`` with 400 (Authlib's
    class says 401, which RFC 6750 uses for a bearer token of another scheme)."""

    status_code = 400


def _check_hint(endpoint: Any, request: Any) -> None:
    hint = request.form.get("token_type_hint")
    if hint and hint not in endpoint.SUPPORTED_TOKEN_TYPES:
        raise UnsupportedTokenHint()


@dataclass(frozen=True, slots=True)
class _Introspected:
    """A token as Authlib's introspection wants to see it."""

    body: dict[str, Any]
    revoked: bool

    def is_expired(self) -> bool:
        return False  # expired tokens are not found at all

    def is_revoked(self) -> bool:
        return self.revoked


class Introspection(IntrospectionEndpoint):
    """RFC 7662 at Keycloak's ``token/introspect``; callers authenticate as a key.

    Access tokens are active while they verify and stand; refresh tokens while they are
    unused and their family and session live. Anything else, another realm's tokens
    included, is ``{"active": false}``, never an error.
    """

    CLIENT_AUTH_METHODS = list(SECRET_AUTH_METHODS)
    server: RealmContext

    def check_params(self, request: Any, client: Any) -> None:
        _check_hint(self, request)
        super().check_params(request, client)

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Introspected | None:
        claims = verified_claims(self.server, token_string)
        if claims is not None:
            body = {**claims, "client_id": claims["azp"], "token_type": "Bearer"}
            if "preferred_username" in claims:
                body["username"] = claims["preferred_username"]
            return _Introspected(body, revoked=not token_stands(self.server, claims))
        record = _refresh_token(self.server, token_string)
        if record is None or record.used:
            return None
        user = self.server.identity.storage.get_user_by_id(record.org, record.user_id)
        if user is None or not people.can_sign_in(user):
            return None
        body = {
            "sub": record.user_id,
            "username": user.username,
            "client_id": record.client_id,
            "scope": record.scope,
            "exp": int(record.expires_at.timestamp()),
            "iat": int(record.issued_at.timestamp()),
            "iss": self.server.identity.issuer(record.org),
            "token_type": "Refresh",
        }
        if record.session_id is not None:
            body["sid"] = record.session_id
        return _Introspected(body, revoked=False)

    def check_permission(self, token: _Introspected, client: KeyClient, request: Any) -> bool:
        return True  # every token found belongs to the request's realm, as the client does

    def introspect_token(self, token: _Introspected) -> dict[str, Any]:
        return {"active": True, **token.body}


@dataclass(frozen=True, slots=True)
class _Refresh:
    record: RefreshToken

    def check_client(self, client: Any) -> bool:
        return bool(self.record.client_id == client.get_client_id())


def _refresh_token(server: RealmContext, token: str) -> RefreshToken | None:
    if not isinstance(token, str) or not token or len(token) > 256:
        return None
    return server.identity.storage.get_refresh_token(server.current_org(), lookup_digest(token))


class Revocation(RevocationEndpoint):
    """RFC 7009. Revoking a refresh token revokes its whole family. Access tokens are
    self-contained and short-lived: revoking one is answered 200 and changes nothing;
    sign out (logout) to end a person's session."""

    CLIENT_AUTH_METHODS = ALL_AUTH_METHODS
    server: RealmContext

    def check_params(self, request: Any, client: Any) -> None:
        _check_hint(self, request)
        super().check_params(request, client)

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Refresh | None:
        record = _refresh_token(self.server, token_string)
        return _Refresh(record) if record is not None else None

    def revoke_token(self, token: _Refresh, request: Any) -> None:
        self.server.identity.storage.revoke_refresh_family(token.record.org, token.record.family_id)


class TemporarilyUnavailable(InvalidRequestError):
    error = "temporarily_unavailable"
    status_code = 503


class DeviceStart(DeviceAuthorizationEndpoint):
    """RFC 8628 device authorization at Keycloak's ``auth/device``, for promptsvc-cli."""

    CLIENT_AUTH_METHODS = NONE_AUTH
    server: RealmContext

    def __init__(self, server: RealmContext) -> None:
        super().__init__(server)
        self.EXPIRES_IN = server.lifetimes.device
        self.INTERVAL = server.lifetimes.device_interval

    def authenticate_client(self, request: Any) -> PublicClient:
        client: PublicClient = super().authenticate_client(request)
        if not client.check_grant_type(DEVICE_CODE):
            raise UnauthorizedClientError("The client may not use the device grant")
        if client.get_allowed_scope(request.payload.scope) is None:
            raise InvalidScopeError()
        return client

    def get_verification_uri(self) -> str:
        return self.server.identity.issuer(self.server.current_org()) + DEVICE_PAGE_PATH

    def save_device_credential(
        self, client_id: str, scope: str | None, data: dict[str, Any]
    ) -> None:
        storage = self.server.identity.storage
        now = storage.clock()
        try:
            storage.add_device_authorization(
                DeviceAuthorization(
                    org=self.server.current_org(),
                    device_code_hash=lookup_digest(data["device_code"]),
                    user_code=data["user_code"],
                    client_id=client_id,
                    scope=" ".join((scope or "").split()),
                    interval=self.INTERVAL,
                    created_at=now,
                    expires_at=now + timedelta(seconds=self.EXPIRES_IN) + DEVICE_GRACE,
                )
            )
        except DeviceCodeExists:
            raise TemporarilyUnavailable("Please try again") from None


class EndSession(EndSessionEndpoint):
    """RP-initiated logout (OpenID Connect) at Keycloak's ``logout``.

    Ends the session named by ``id_token_hint`` (its ``sid``) and the browser's own
    session, which revokes their refresh tokens. The logout view asks the person first
    unless the hint names the browser's own session. Redirects only to a registered
    ``post_logout_redirect_uri``, and only with an ``id_token_hint`` of this realm or
    after the person confirmed on the logout page.
    """

    server: RealmContext

    def get_server_jwks(self) -> dict[str, Any]:
        return self.server.identity.jwks()

    def get_algorithms(self) -> list[str]:
        return ["RS256"]

    def validate_request(self, request: Any) -> EndSessionRequest:
        validated = super().validate_request(request)
        claims = validated.id_token_claims
        issuer = self.server.identity.issuer(self.server.current_org())
        if claims is not None and claims.get("iss") != issuer:
            raise InvalidRequestError("The id_token_hint was not issued by this realm")
        return validated

    def is_post_logout_redirect_uri_legitimate(
        self, request: Any, post_logout_redirect_uri: str, client: Any, logout_hint: str | None
    ) -> bool:
        return bool(self.server.end_session_state().confirmed)

    def end_session(self, end_session_request: EndSessionRequest) -> None:
        state = self.server.end_session_state()
        claims = end_session_request.id_token_claims or {}
        org = self.server.current_org()
        for session_id in {claims.get("sid"), state.cookie_session_id}:
            if isinstance(session_id, str) and session_id:
                self.server.identity.storage.end_session(org, session_id)
                state.ended.append(session_id)


@dataclass(frozen=True, slots=True)
class _TokenClient:
    client_id: str
    client_metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Bearer:
    """An access token as Authlib's resource protector wants to see it."""

    claims: dict[str, Any]
    revoked: bool

    @property
    def scope(self) -> str:
        return str(self.claims.get("scope", ""))

    def get_scope(self) -> str:
        return self.scope

    def is_expired(self) -> bool:
        return False  # the verifier refused it then

    def is_revoked(self) -> bool:
        return self.revoked

    def get_client(self) -> _TokenClient:
        return _TokenClient(self.claims["azp"])

    def get_user(self) -> dict[str, Any]:
        return self.claims


class _BearerValidator(BearerTokenValidator):
    def __init__(self, server: RealmContext) -> None:
        super().__init__()
        self.server = server

    def authenticate_token(self, token_string: str) -> _Bearer | None:
        claims = verified_claims(self.server, token_string)
        if claims is None:
            return None
        return _Bearer(claims, revoked=not token_stands(self.server, claims))


class UserInfoAnswer(UserInfoEndpoint):
    """OpenID Connect userinfo: ``sub``, ``preferred_username``, ``org``, ``roles`` of
    a standing access token of the realm with scope ``openid``. A key's token answers
    as Keycloak's service accounts do (``service-account-<client_id>``)."""

    def __init__(self, server: RealmContext) -> None:
        protector = ResourceProtector()
        protector.register_token_validator(_BearerValidator(server))
        super().__init__(server, resource_protector=protector)

    def __call__(self, request: Any) -> Any:
        try:
            return super().__call__(request)
        except (MissingAuthorizationError, UnsupportedTokenTypeError):
            # RFC 6750 has no code of its own for these: a Bearer challenge, invalid_token.
            raise InvalidTokenError("Send 'Authorization: Bearer <access token>'") from None

    def generate_user_info(self, user: dict[str, Any], scope: str) -> UserInfo:
        username = user.get("preferred_username") or f"service-account-{user['azp']}"
        return UserInfo(
            sub=user["sub"], preferred_username=username, org=user["org"], roles=user["roles"]
        )
