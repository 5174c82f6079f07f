"""The realm's OAuth 2.0 authorization server: Authlib's, given our storage and tokens.

Authlib runs the protocol (grants, client authentication, introspection); this module
supplies what Authlib asks of an application:

* ``query_client``: a client of the realm named in the URL
  (:mod:`identity.clients`);
* a token generator: RS256 JWTs from :mod:`identity.tokens`, with our lifetime (not
  Authlib's 10-day default) and the scope :mod:`identity.scopes` grants;
* HTTP Basic client authentication that form-decodes id and secret (RFC 6749 2.3.1:
  ``+`` is a space; Authlib's own leaves ``+`` as it is);
* request objects that read parameters from the form body only (never from the query
  string, where a secret would end up in access logs);
* error answers: RFC 6749 bodies plus ``code``/``message``, ``invalid_client`` always
  401 with one description (unknown realm, unknown or revoked key and a wrong secret
  cannot be told apart).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import OAuth2Payload, OAuth2Request
from authlib.oauth2.rfc6749.errors import InvalidScopeError
from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from flask import Request, Response, jsonify, request
from werkzeug.datastructures import MultiDict

from identity import keys, tokens
from identity.clients import ConsoleUris, KeyClient
from identity.core import Identity
from identity.discovery import SECRET_AUTH_METHODS
from identity.errors import InvalidClient, InvalidScope, InvalidToken
from identity.responses import no_store
from identity.tokens import Subject

INVALID_CLIENT_DESCRIPTION = "Invalid client or client credentials"
# RFC 7009 2.2.1 answers unsupported_token_type with 400; Authlib uses 401.
_STATUS_OVERRIDES = {"invalid_client": 401, "unsupported_token_type": 400}


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


def realm_org() -> str:
    """The org (realm) named in the current request's URL."""
    org = (request.view_args or {}).get("org", "")
    return org if isinstance(org, str) else ""


class _ClientCredentialsGrant(ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(SECRET_AUTH_METHODS)


@dataclass(frozen=True, slots=True)
class _AccessToken:
    """An access token that verified, as Authlib's introspection wants to see it."""

    claims: dict[str, Any]
    revoked: bool

    def is_expired(self) -> bool:
        return False  # the verifier refused expired tokens already

    def is_revoked(self) -> bool:
        return self.revoked


class _Introspection(IntrospectionEndpoint):
    """RFC 7662 at Keycloak's ``token/introspect``; callers authenticate as a key.

    A token is active when the API would accept it and what issued it still stands:
    its key is not revoked. Expired, malformed, foreign-realm and other issuers' tokens
    are ``{"active": false}``, never an error.
    """

    CLIENT_AUTH_METHODS = list(SECRET_AUTH_METHODS)

    def __init__(self, server: RealmServer) -> None:
        super().__init__(server)
        self._identity = server.identity

    def query_token(self, token_string: str, token_type_hint: str | None) -> _AccessToken | None:
        try:
            principal = self._identity.verify_token(token_string)
        except InvalidToken:
            return None
        key = keys.active_key(self._identity.storage, principal.org, principal.client_id)
        return _AccessToken(tokens.payload(token_string), revoked=key is None)

    def check_permission(self, token: _AccessToken, client: KeyClient, request: object) -> bool:
        return bool(token.claims.get("org") == client.key.org)

    def introspect_token(self, token: _AccessToken) -> dict[str, Any]:
        claims = token.claims
        body = {"active": True, **claims, "client_id": claims.get("azp"), "token_type": "Bearer"}
        if "preferred_username" in claims:
            body["username"] = claims["preferred_username"]
        return body


class _FormPayload(OAuth2Payload):
    def __init__(self, params: MultiDict[str, str]) -> None:
        self._params = params

    @property
    def data(self) -> MultiDict[str, str]:
        return self._params

    @property
    def datalist(self) -> dict[str, list[str]]:
        return {name: self._params.getlist(name) for name in self._params}


class RealmRequest(OAuth2Request):
    """Authlib's request over Flask's, its parameters from the form body only."""

    def __init__(self, flask_request: Request) -> None:
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
        self.payload = _FormPayload(flask_request.form)

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

    def __init__(self, identity: Identity, console: ConsoleUris) -> None:
        super().__init__()
        self.identity = identity
        self.console = console
        self.register_grant(_ClientCredentialsGrant)
        self.register_token_generator("default", self._generate_token)
        self.register_client_auth_method("client_secret_basic", _authenticate_basic)
        self.register_endpoint(_Introspection(self))

    def query_client(self, client_id: str) -> KeyClient | None:
        key = keys.active_key(self.identity.storage, realm_org(), client_id)
        return KeyClient(key) if key is not None else None

    def save_token(self, token: dict[str, Any], oauth_request: OAuth2Request) -> None:
        return None  # access tokens are self-contained JWTs: nothing to keep

    def create_oauth2_request(self, _: object) -> RealmRequest:
        return RealmRequest(request)

    def handle_response(self, status: int, body: Any, headers: Any) -> Response:
        response: Response = super().handle_response(status, body, headers)
        return no_store(response)

    def handle_error_response(self, _: object, error: OAuth2Error) -> Response:
        if error.error == InvalidClient.error:
            return oauth_error_response(
                InvalidClient.error, INVALID_CLIENT_DESCRIPTION, InvalidClient.status
            )
        status, body, headers = error()
        status = _STATUS_OVERRIDES.get(error.error, status)
        description = dict(body).get("error_description") or error.error
        return oauth_error_response(error.error, description, status, headers)

    def _generate_token(
        self,
        grant_type: str,
        client: KeyClient,
        user: object = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        try:
            granted = client.get_allowed_scope(scope)
        except InvalidScope as exc:
            raise InvalidScopeError(exc.description) from None
        return self.identity.mint(Subject.of_key(client.key), granted)
