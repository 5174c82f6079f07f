"""What a realm publishes about itself: OpenID discovery and Keycloak's realm document.

Both follow Keycloak's paths and names, so clients written for Keycloak (python-keycloak,
Authlib's and other OIDC clients with strict discovery validation) work unchanged.
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from identity.scopes import SUPPORTED_SCOPES
from identity.signing import ALGORITHM, ParsedKey

PROTOCOL = "/protocol/openid-connect"
AUTH_PATH = f"{PROTOCOL}/auth"
TOKEN_PATH = f"{PROTOCOL}/token"
INTROSPECT_PATH = f"{PROTOCOL}/token/introspect"
CERTS_PATH = f"{PROTOCOL}/certs"
USERINFO_PATH = f"{PROTOCOL}/userinfo"
REVOKE_PATH = f"{PROTOCOL}/revoke"
LOGOUT_PATH = f"{PROTOCOL}/logout"
DEVICE_AUTH_PATH = f"{PROTOCOL}/auth/device"
DEVICE_PAGE_PATH = "/device"
# Keycloak's path of OpenID Connect dynamic client registration (RFC 7591).
REGISTRATION_PATH = "/clients-registrations/openid-connect"

CLIENT_CREDENTIALS = "client_credentials"
AUTHORIZATION_CODE = "authorization_code"
REFRESH_TOKEN = "refresh_token"
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
GRANT_TYPES = (AUTHORIZATION_CODE, REFRESH_TOKEN, CLIENT_CREDENTIALS, DEVICE_CODE)
# Keys authenticate with a secret; the two built-in public clients with none.
SECRET_AUTH_METHODS = ("client_secret_basic", "client_secret_post")
TOKEN_AUTH_METHODS = (*SECRET_AUTH_METHODS, "none")
CLAIMS = (
    *("iss", "sub", "azp", "aud", "exp", "iat", "jti", "typ", "sid"),
    *("org", "roles", "realm_access", "scope", "preferred_username"),
)


def openid_configuration(issuer: str) -> dict[str, Any]:
    """The discovery document of the realm whose ``iss`` is ``issuer``."""
    return {
        "issuer": issuer,
        "authorization_endpoint": issuer + AUTH_PATH,
        "token_endpoint": issuer + TOKEN_PATH,
        "introspection_endpoint": issuer + INTROSPECT_PATH,
        "userinfo_endpoint": issuer + USERINFO_PATH,
        "end_session_endpoint": issuer + LOGOUT_PATH,
        "jwks_uri": issuer + CERTS_PATH,
        "revocation_endpoint": issuer + REVOKE_PATH,
        "device_authorization_endpoint": issuer + DEVICE_AUTH_PATH,
        "registration_endpoint": issuer + REGISTRATION_PATH,
        "grant_types_supported": list(GRANT_TYPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [ALGORITHM],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": list(TOKEN_AUTH_METHODS),
        "introspection_endpoint_auth_methods_supported": list(SECRET_AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(TOKEN_AUTH_METHODS),
        "scopes_supported": list(SUPPORTED_SCOPES),
        "claims_supported": list(CLAIMS),
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
    }


def realm_document(org: str, issuer: str, account_url: str, signer: ParsedKey) -> dict[str, Any]:
    """Keycloak's ``GET /realms/<realm>`` answer; ``public_key`` is the current signing
    key as base64 DER (SubjectPublicKeyInfo), which python-keycloak's ``public_key()``
    returns for callers to wrap in PEM armour."""
    der = signer.private_key.public_key().public_bytes(
        Encoding.DER, PublicFormat.SubjectPublicKeyInfo
    )
    return {
        "realm": org,
        "public_key": base64.b64encode(der).decode("ascii"),
        "token-service": issuer + PROTOCOL,
        "account-service": account_url,
        "tokens-not-before": 0,
    }
