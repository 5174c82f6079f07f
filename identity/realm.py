"""Realm endpoints (one realm per org, Keycloak's paths), served by Authlib.

* ``POST /realms/<org>/protocol/openid-connect/token``: client_credentials only,
  form-encoded, client_secret_basic or client_secret_post.
* ``GET /realms/<org>/protocol/openid-connect/certs``: the JWKS (public parts only).
* ``GET /realms/<org>/.well-known/openid-configuration``: discovery.

Authlib's ``AuthorizationServer`` runs the token grant with our storage-backed
``query_client`` (the client is looked up as (org from the URL, client_id)) and our
token generator (an RS256 JWT from :mod:`identity.tokens`, lifetime ours, not Authlib's
10-day default). What Authlib would answer differently from docs/api.md section 3.2 is
settled before it runs (JSON bodies, missing fields, other grant types) or after (invalid_client is
always 401 with one description, so unknown realm, unknown or revoked key and a wrong
secret cannot be told apart). Every error body is RFC 6749's plus ``code``/``message``.
"""

from __future__ import annotations

from typing import Any

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.integrations.flask_oauth2.requests import FlaskOAuth2Request
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import ClientMixin, OAuth2Payload, OAuth2Request
from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant
from flask import Blueprint, Request, Response, jsonify, request
from werkzeug.datastructures import MultiDict

from identity import keys
from identity.core import Identity
from identity.errors import InvalidClient, InvalidRequest, OAuthError, UnsupportedGrantType
from identity.responses import api_error, no_store
from identity.tokens import ROLE_SCOPES
from storage.base import ApiKey

GRANT_TYPE = "client_credentials"
AUTH_METHODS = ("client_secret_basic", "client_secret_post")
FORM_MIMETYPE = "application/x-www-form-urlencoded"
INVALID_CLIENT_DESCRIPTION = "Invalid client or client credentials"
# Clients re-fetch the JWKS when a token names a kid they do not know, so a short
# cache lifetime only bounds how long a retired key stays trusted by them.
JWKS_MAX_AGE = 300
CLAIMS = (
    *("iss", "sub", "azp", "aud", "exp", "iat", "jti", "typ"),
    *("org", "roles", "realm_access", "scope"),
)


def realm_blueprint(identity: Identity) -> Blueprint:
    """The realm endpoints of ``identity`` as a blueprint."""
    server = _RealmServer(identity)
    bp = Blueprint("identity_realm", __name__)

    @bp.post("/realms/<org>/protocol/openid-connect/token")
    def token(org: str) -> Response:
        try:
            _precheck_token_request()
        except OAuthError as exc:
            return oauth_error_response(exc.error, exc.description, exc.status)
        response: Response = server.create_token_response()
        return response

    @bp.get("/realms/<org>/protocol/openid-connect/certs")
    def certs(org: str) -> Response | tuple[Response, int]:
        if not identity.org_exists(org):
            return realm_not_found(org)
        response = jsonify(identity.jwks())
        response.headers["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE}"
        return response

    @bp.get("/realms/<org>/.well-known/openid-configuration")
    def openid_configuration(org: str) -> Response | tuple[Response, int]:
        if not identity.org_exists(org):
            return realm_not_found(org)
        issuer = identity.issuer(org)
        return jsonify(
            {
                "issuer": issuer,
                "token_endpoint": f"{issuer}/protocol/openid-connect/token",
                "jwks_uri": f"{issuer}/protocol/openid-connect/certs",
                "grant_types_supported": [GRANT_TYPE],
                "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
                "scopes_supported": sorted(
                    {scope for scopes in ROLE_SCOPES.values() for scope in scopes.split()}
                ),
                "claims_supported": list(CLAIMS),
            }
        )

    return bp


def oauth_error_response(error: str, description: str, status: int) -> Response:
    """An RFC 6749 error body plus our ``code`` and ``message``."""
    response = jsonify(
        {"error": error, "error_description": description, "code": error, "message": description}
    )
    response.status_code = status
    no_store(response)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Basic realm="promptsvc"'
    return response


def too_many_requests(retry_after: int) -> Response:
    """429 for a rate-limited token request (identity.ratelimit), RFC 6749 style."""
    response = oauth_error_response(
        "too_many_requests", "too many token requests, retry later", 429
    )
    response.headers["Retry-After"] = str(retry_after)
    return response


def realm_not_found(org: str) -> tuple[Response, int]:
    """404 in the API's error shape; the slug is echoed only when well-formed."""
    message = f"realm '{org}' not found" if keys.valid_org(org) else "realm not found"
    return api_error(404, "not_found", message), 404


def _precheck_token_request() -> None:
    """What the token endpoint answers before client authentication, in RFC 6749's order."""
    if request.mimetype != FORM_MIMETYPE:
        raise InvalidRequest(f"The token request must be form-encoded ({FORM_MIMETYPE})")
    form = request.form
    for name, values in form.lists():
        if len(values) > 1:  # RFC 6749 3.2: parameters must not repeat
            raise InvalidRequest(f"Parameter '{name}' is repeated")
    grant_type = form.get("grant_type")
    if not grant_type:
        raise InvalidRequest("Missing 'grant_type' parameter")
    if grant_type != GRANT_TYPE:
        raise UnsupportedGrantType(f"grant_type={grant_type} is not supported")
    basic = request.headers.get("Authorization", "")[:6].lower() == "basic "
    if basic and "client_secret" in form:
        raise InvalidRequest("Use one client authentication method, not Basic and a form secret")
    if not basic and not (form.get("client_id") and form.get("client_secret")):
        raise InvalidRequest("Missing 'client_id' or 'client_secret' parameter")


class _Client(ClientMixin):
    """An API key as Authlib's client model."""

    def __init__(self, key: ApiKey) -> None:
        self.key = key

    def get_client_id(self) -> str:
        return self.key.client_id

    def get_default_redirect_uri(self) -> None:
        return None

    def get_allowed_scope(self, scope: str | None) -> str:
        return ROLE_SCOPES[self.key.role]  # fixed by the role; a requested scope is ignored

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return keys.check_secret(self.key, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return endpoint == "token" and method in AUTH_METHODS

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == GRANT_TYPE


class _ClientCredentialsGrant(ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)


class _FormPayload(OAuth2Payload):
    """Token parameters from the form body only: never from the query string, where a
    secret would end up in access logs (Authlib's default reads both)."""

    def __init__(self, form: MultiDict[str, str]) -> None:
        self._form = form

    @property
    def data(self) -> MultiDict[str, str]:
        return self._form

    @property
    def datalist(self) -> dict[str, list[str]]:
        return {name: self._form.getlist(name) for name in self._form}


class _TokenRequest(FlaskOAuth2Request):
    def __init__(self, flask_request: Request) -> None:
        # OAuth2Request.__init__ refuses plain-http URLs other than loopback. Whether TLS
        # is used is the deployment's decision (a TLS-terminating proxy makes Flask see
        # http), and the client_credentials grant never uses the URL, so the check is
        # given the https form of it and the real URL kept.
        url = flask_request.url
        OAuth2Request.__init__(
            self,
            method=flask_request.method,
            uri="https" + url[4:] if url.startswith("http:") else url,
            headers=flask_request.headers,
        )
        self.uri = url
        self._request = flask_request
        self.payload = _FormPayload(flask_request.form)


class _RealmServer(AuthorizationServer):
    def __init__(self, identity: Identity) -> None:
        super().__init__()
        self._identity = identity
        self.register_grant(_ClientCredentialsGrant)
        self.register_token_generator("default", self._generate_token)

    def query_client(self, client_id: str) -> _Client | None:
        org = (request.view_args or {}).get("org", "")
        key = keys.active_key(self._identity.storage, org, client_id)
        return _Client(key) if key is not None else None

    def save_token(self, token: dict[str, Any], oauth_request: OAuth2Request) -> None:
        return None  # tokens are self-contained JWTs: nothing to keep

    def create_oauth2_request(self, _: object) -> _TokenRequest:
        return _TokenRequest(request)

    def handle_error_response(self, _: object, error: OAuth2Error) -> Response:
        if error.error == InvalidClient.error:
            return oauth_error_response(
                InvalidClient.error, INVALID_CLIENT_DESCRIPTION, InvalidClient.status
            )
        status, body, _headers = error()
        description = body.get("error_description") or error.error
        return oauth_error_response(error.error, description, status)

    def _generate_token(
        self,
        grant_type: str,
        client: _Client,
        user: object = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        return self._identity.mint(client.key)
