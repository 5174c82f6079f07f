"""Errors of the identity package, all under one root.

Tree::

    IdentityError
    ├── OAuthError                 an RFC 6749 token error: ``error`` + HTTP status
    │   ├── InvalidRequest         invalid_request 400
    │   ├── InvalidClient          invalid_client 401 (also the sdk-token 401)
    │   ├── InvalidScope           invalid_scope 400
    │   └── UnsupportedGrantType   unsupported_grant_type 400
    ├── InvalidToken               a bearer token that does not verify (``reason``)
    ├── InvalidKeyRequest          an API key cannot be made as asked (bad org/role/...)
    ├── InvalidUserRequest         a user cannot be made or changed as asked
    ├── BootstrapError             a bootstrap file that cannot be applied
    └── SigningKeyError            PROMPTSVC_SIGNING_KEY_FILE cannot be used
"""

from __future__ import annotations


class IdentityError(Exception):
    """Root of every error the identity package raises."""


class OAuthError(IdentityError):
    """An RFC 6749 section 5.2 error: ``error`` is the RFC's code, ``status`` the HTTP
    status, ``description`` the ``error_description`` (ASCII, no quotes)."""

    error = "invalid_request"
    status = 400

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class InvalidRequest(OAuthError):
    error = "invalid_request"
    status = 400


class InvalidClient(OAuthError):
    # Always 401, whichever way the client authenticated: unknown realm, unknown or
    # revoked key and a wrong secret all look the same to the caller.
    error = "invalid_client"
    status = 401


class InvalidScope(OAuthError):
    error = "invalid_scope"
    status = 400


class UnsupportedGrantType(OAuthError):
    error = "unsupported_grant_type"
    status = 400


# Reasons an InvalidToken carries (short codes for logs and tests; the description is
# what goes into WWW-Authenticate).
MISSING = "missing"
MALFORMED = "malformed"
DISALLOWED_ALGORITHM = "disallowed_algorithm"
UNKNOWN_KEY = "unknown_key"
BAD_SIGNATURE = "bad_signature"
EXPIRED = "expired"
WRONG_ISSUER = "wrong_issuer"
WRONG_AUDIENCE = "wrong_audience"
UNKNOWN_ORG = "unknown_org"
INVALID_CLAIMS = "invalid_claims"


class InvalidToken(IdentityError):
    """A bearer token was refused. ``reason`` is one of the codes above;
    ``description`` is safe to send in ``WWW-Authenticate`` (no quotes, no secrets)."""

    def __init__(self, reason: str, description: str) -> None:
        super().__init__(f"{reason}: {description}")
        self.reason = reason
        self.description = description


class InvalidKeyRequest(IdentityError):
    """An API key cannot be created as asked; the message says which input is wrong."""


class InvalidUserRequest(IdentityError):
    """A user cannot be created or changed as asked; the message says which input is
    wrong (never the password itself)."""


class BootstrapError(IdentityError):
    """The bootstrap file cannot be read or applied; the message names file and entry."""


class SigningKeyError(IdentityError):
    """The configured signing key file cannot be used; the message says why."""
