"""The realm's OAuth 2.0 authorization server: Authlib's, given our storage and tokens.

Authlib runs the protocol (:mod:`identity.grants`, :mod:`identity.endpoints`); this
module supplies what its server asks of an application:

* ``query_client``: a client of the realm named in the URL (:mod:`identity.clients`):
  an API key, one of the two built-in public clients once the realm exists, or a
  public client registered through RFC 7591 (:mod:`identity.registration`);
* a token generator: RS256 JWTs from :mod:`identity.tokens` with our lifetime (not
  Authlib's 10-day default) and the scope :mod:`identity.scopes` grants, plus a
  refresh token for people;
* HTTP Basic client authentication that form-decodes id and secret (RFC 6749 2.3.1:
  ``+`` is a space; Authlib's own leaves ``+`` as it is);
* request objects that read OAuth parameters from where each endpoint expects them:
  the form body for the token-like endpoints (never the query string, where a secret
  would end up in access logs), the query string for the authorization endpoint;
* error answers: RFC 6749 bodies plus ``code``/``message``, ``invalid_client`` always
  401 with one description (unknown realm, unknown or revoked key and a wrong secret
  cannot be told apart).
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote_plus

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import OAuth2Payload, OAuth2Request
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidScopeError
from flask import Request, Response, g, jsonify, request
from werkzeug.datastructures import MultiDict

from identity import endpoints, grants, keys, people, registration, scopes
from identity.clients import PUBLIC_CLIENT_IDS, ConsoleUris, KeyClient, PublicClient
from identity.core import Identity
from identity.errors import InvalidClient, InvalidScope
from identity.people import Lifetimes, Person, seconds_until
from identity.realm_context import EndSessionState
from identity.responses import no_store
from identity.tokens import Subject
from storage import DeviceAuthorization, SessionNotFound

INVALID_CLIENT_DESCRIPTION = "Invalid client or client credentials"
_END_SESSION_STATE = "identity_end_session"


def oauth_error_response(
    error: str, description: str, status: int, headers: list[tuple[str, str]] | None = None
) -> Response:
    """An RFC 6749 error body plus the API's ``code`` and ``message``."""
    response = jsonify(
        {"error": error, "error_description": description, "code": error, "message": description}
    )
    response.status_code = status
    for name, value in headers or []:
        if name.lower() != "content-type":
            response.headers[name] = value
    no_store(response)
    if status == 401 and error == InvalidClient.error:
        response.headers["WWW-Authenticate"] = 'Basic realm="promptsvc"'
    return response


class _Params(OAuth2Payload):
    def __init__(self, params: MultiDict[str, str]) -> None:
        self._params = params

    @property
    def data(self) -> MultiDict[str, str]:
        return self._params

    @property
    def datalist(self) -> dict[str, list[str]]:
        return {name: self._params.getlist(name) for name in self._params}


class RealmRequest(OAuth2Request):
    """Authlib's request over Flask's. Its OAuth parameters come from the form body, or
    from the query string (``query=True``)."""

    def __init__(self, flask_request: Request, *, query: bool = False) -> None:
        # OAuth2Request.__init__ refuses plain-http URLs other than loopback. Whether TLS
        # is used is the deployment's decision (a TLS-terminating proxy makes Flask see
        # http), so the check is given the https form of the URL and the real one kept.
        url = flask_request.url
        super().__init__(
            method=flask_request.method,
            uri="https" + url[4:] if url.startswith("http:") else url,
            headers=flask_request.headers,
        )
        self.uri = url
        self._request = flask_request
        self.payload = _Params(flask_request.args if query else flask_request.form)

    @property
    def args(self) -> MultiDict[str, str]:
        return self._request.args

    @property
    def form(self) -> MultiDict[str, str]:
        return self._request.form


def basic_credentials(headers: Any) -> tuple[str | None, str | None]:
    """Client id and secret of an ``Authorization: Basic`` header, form-decoded as
    RFC 6749 2.3.1 says (``+`` is a space); (None, None) when there is none."""
    scheme, _, value = (headers.get("Authorization") or "").partition(" ")
    if scheme.lower() != "basic":
        return None, None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None, None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        return None, None
    return unquote_plus(client_id), unquote_plus(secret)


def _authenticate_basic(query_client: Any, oauth_request: OAuth2Request) -> Any:
    client_id, secret = basic_credentials(oauth_request.headers)
    if not client_id or not secret:
        return None
    client = query_client(client_id)
    if client is None or not client.check_client_secret(secret):
        return None
    return client


class RealmServer(AuthorizationServer):
    """Authlib's authorization server for every realm of ``identity`` (the realm of a
    request is the ``org`` in its URL)."""

    def __init__(self, identity: Identity, console: ConsoleUris, lifetimes: Lifetimes) -> None:
        super().__init__()
        self.scopes_supported = list(scopes.SUPPORTED_SCOPES)
        self.identity = identity
        self.console = console
        self.lifetimes = lifetimes
        self.register_grant(grants.ClientCredentials)
        self.register_grant(
            grants.AuthorizationCodeGrant,
            [grants.S256Challenge(required=True), grants.IdTokenOnCode(self)],
        )
        self.register_grant(grants.RefreshTokenGrant, [grants.IdToken(self)])
        self.register_grant(grants.DeviceGrant, [grants.IdToken(self)])
        self.register_token_generator("default", self._generate_token)
        self.register_client_auth_method("client_secret_basic", _authenticate_basic)
        for endpoint in (
            endpoints.Introspection(self),
            endpoints.Revocation(self),
            endpoints.DeviceStart(self),
            endpoints.EndSession(self),
            endpoints.UserInfoAnswer(self),
            registration.Registration(self),
        ):
            self.register_endpoint(endpoint)

    # -- what the grants and endpoints ask

    @staticmethod
    def current_org() -> str:
        """The org (realm) named in the current request's URL."""
        org = (request.view_args or {}).get("org", "")
        return org if isinstance(org, str) else ""

    def expiry(self, seconds: int) -> datetime:
        return self.identity.storage.clock() + timedelta(seconds=seconds)

    def device_expired(self, record: DeviceAuthorization) -> bool:
        deadline = record.created_at + timedelta(seconds=self.lifetimes.device)
        return self.identity.storage.clock() >= deadline

    def end_session_state(self) -> EndSessionState:
        state: EndSessionState | None = g.get(_END_SESSION_STATE)
        if state is None:
            state = EndSessionState()
            setattr(g, _END_SESSION_STATE, state)
        return state

    # -- Authlib's application hooks

    def query_client(self, client_id: str) -> KeyClient | PublicClient | None:
        org = self.current_org()
        if client_id in PUBLIC_CLIENT_IDS or client_id.startswith(keys.REGISTERED_PREFIX):
            if not self.identity.org_exists(org):
                return None
            if client_id in PUBLIC_CLIENT_IDS:
                return PublicClient(org, client_id, self.console)
            return registration.registered_client(self.identity.storage, org, client_id)
        key = keys.active_key(self.identity.storage, org, client_id)
        return KeyClient(key) if key is not None else None

    def save_token(self, token: dict[str, Any], oauth_request: OAuth2Request) -> None:
        return None  # access tokens are self-contained JWTs; refresh tokens kept already

    def create_oauth2_request(self, _: object) -> RealmRequest:
        # The authorization endpoint's parameters stay in its URL when the login form
        # posts back; GET requests (logout) have only their query string.
        query = request.method == "GET" or request.endpoint == "identity_login.auth"
        return RealmRequest(request, query=query)

    def handle_response(self, status: int, body: Any, headers: Any) -> Response:
        response: Response = super().handle_response(status, body, headers)
        return no_store(response)

    def handle_error_response(self, _: object, error: OAuth2Error) -> Response:
        if error.error == InvalidClient.error:
            return oauth_error_response(
                InvalidClient.error, INVALID_CLIENT_DESCRIPTION, InvalidClient.status
            )
        status, body, headers = error()
        if status == 302:  # an error sent back to a validated redirect_uri
            return self.handle_response(status, body, headers)
        description = dict(body).get("error_description") or error.error
        return oauth_error_response(error.error, description, status, headers)

    def _generate_token(
        self,
        grant_type: str,
        client: KeyClient | PublicClient,
        user: Person | None = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        if isinstance(client, KeyClient):
            try:
                granted = client.get_allowed_scope(scope)
            except InvalidScope as exc:
                raise InvalidScopeError(exc.description) from None
            return self.identity.mint(Subject.of_key(client.key), granted)
        if user is None:  # pragma: no cover - every people grant passes its person
            raise InvalidGrantError()
        # The role may have changed since the sign-in: the scope follows it down.
        granted = scopes.narrow(user.user.role, scope or "")
        subject = Subject(
            org=user.user.org,
            user_id=user.user.user_id,
            client_id=client.get_client_id(),
            role=user.user.role,
            username=user.user.username,
            session_id=user.session_id,
        )
        token = self.identity.mint(subject, granted)
        if include_refresh_token:
            storage = self.identity.storage
            try:
                refresh = user.refresh or people.start_refresh(
                    storage, user, client.get_client_id(), granted, self.lifetimes
                )
            except SessionNotFound:
                raise InvalidGrantError("The session has ended") from None
            token["refresh_token"] = refresh.token
            token["refresh_expires_in"] = seconds_until(storage, refresh.expires_at)
        return token
