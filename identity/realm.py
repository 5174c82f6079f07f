"""Realm endpoints for clients (one realm per org, Keycloak's paths), served by Authlib.

Under ``/realms/<org>/protocol/openid-connect/``:

* ``POST token``: client_credentials (keys, client_secret_basic or client_secret_post,
  ``scope`` may narrow), authorization_code (with ``code_verifier``), refresh_token
  (rotating) and the device_code grant (public clients ``promptsvc-console`` and
  ``promptsvc-cli``, no secret);
* ``POST token/introspect`` (RFC 7662, the caller authenticated as a key);
* ``POST revoke`` (RFC 7009), ``GET|POST userinfo``, ``POST auth/device`` (RFC 8628);
* ``GET certs`` (the JWKS);
* ``POST /realms/<org>/clients-registrations/openid-connect`` (RFC 7591 registration of
  public clients, :mod:`identity.registration`);

and ``GET /realms/<org>/.well-known/openid-configuration`` (discovery) and
``GET /realms/<org>`` (Keycloak's realm document). The pages people see (sign-in,
device approval, sign-out) are :mod:`identity.login`'s.

What Authlib would answer differently from docs/api.md section 3 is settled before it
runs (JSON bodies, repeated parameters, missing fields, unknown grant types). Every
error body is RFC 6749's plus ``code``/``message``.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from identity import discovery, keys
from identity.errors import InvalidRequest, OAuthError, UnsupportedGrantType
from identity.oauth import RealmServer, oauth_error_response
from identity.responses import NulCharacter, api_error

FORM_MIMETYPE = "application/x-www-form-urlencoded"
# Clients re-fetch the JWKS when a token names a kid they do not know, so a short
# cache lifetime only bounds how long a retired key stays trusted by them.
JWKS_MAX_AGE = 300
REALM = "/realms/<org>"


def realm_blueprint(server: RealmServer, *, account_url: str) -> Blueprint:
    """The realm endpoints of ``server`` as a blueprint; ``account_url`` is where the
    realm document sends people to manage their account."""
    identity = server.identity
    bp = Blueprint("identity_realm", __name__)
    bp.register_error_handler(
        NulCharacter,
        lambda exc: oauth_error_response(InvalidRequest.error, str(exc.description), 400),
    )

    @bp.post(REALM + discovery.TOKEN_PATH)
    def token(org: str) -> Response:
        try:
            _precheck_token_request()
        except OAuthError as exc:
            return oauth_error_response(exc.error, exc.description, exc.status)
        response: Response = server.create_token_response()
        return response

    def form_endpoint(name: str) -> Response:
        if request.mimetype != FORM_MIMETYPE:
            return oauth_error_response(
                InvalidRequest.error, f"The request must be form-encoded ({FORM_MIMETYPE})", 400
            )
        response: Response = server.create_endpoint_response(name)
        return response

    @bp.post(REALM + discovery.INTROSPECT_PATH)
    def introspect(org: str) -> Response:
        return form_endpoint("introspection")

    @bp.post(REALM + discovery.REVOKE_PATH)
    def revoke(org: str) -> Response:
        return form_endpoint("revocation")

    @bp.post(REALM + discovery.DEVICE_AUTH_PATH)
    def device_authorization(org: str) -> Response:
        return form_endpoint("device_authorization")

    @bp.post(REALM + discovery.REGISTRATION_PATH)
    def register_client(org: str) -> Response:
        if not isinstance(request.get_json(silent=True), dict):
            return oauth_error_response(
                InvalidRequest.error, "The registration request must be a JSON object", 400
            )
        response: Response = server.create_endpoint_response("client_registration")
        return response

    @bp.route(REALM + discovery.USERINFO_PATH, methods=["GET", "POST"])
    def userinfo(org: str) -> Response:
        response: Response = server.create_endpoint_response("userinfo")
        return response

    @bp.get(REALM + discovery.CERTS_PATH)
    def certs(org: str) -> Response | tuple[Response, int]:
        if not identity.org_exists(org):
            return realm_not_found(org)
        response = jsonify(identity.jwks())
        response.headers["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE}"
        return response

    @bp.get(REALM + "/.well-known/openid-configuration")
    def openid_configuration(org: str) -> Response | tuple[Response, int]:
        if not identity.org_exists(org):
            return realm_not_found(org)
        return jsonify(discovery.openid_configuration(identity.issuer(org)))

    @bp.get(REALM)
    def realm(org: str) -> Response | tuple[Response, int]:
        if not identity.org_exists(org):
            return realm_not_found(org)
        signer = identity.keyring.snapshot().signer
        return jsonify(discovery.realm_document(org, identity.issuer(org), account_url, signer))

    return bp


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
    if grant_type not in discovery.GRANT_TYPES:
        raise UnsupportedGrantType(f"grant_type={grant_type[:80]} is not supported")
    basic = request.headers.get("Authorization", "")[:6].lower() == "basic "
    if basic and "client_secret" in form:
        raise InvalidRequest("Use one client authentication method, not Basic and a form secret")
    if basic or (form.get("client_id") and form.get("client_secret")):
        return
    if grant_type == discovery.CLIENT_CREDENTIALS:
        raise InvalidRequest("Missing 'client_id' or 'client_secret' parameter")
    if not form.get("client_id"):
        raise InvalidRequest("Missing 'client_id' parameter")
