"""The OAuth clients of a realm, as Authlib's client model.

* Every API key is a confidential client (:class:`KeyClient`): client credentials only,
  authenticated by its secret.
* Every realm has two built-in public clients (:class:`PublicClient`, no secret), for
  people: ``promptsvc-console`` (the web console; its redirect URIs are exactly the
  ones configured) and ``promptsvc-cli`` (the command line: any loopback redirect URI,
  RFC 8252 7.3, and the device grant).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from authlib.oauth2.rfc6749 import ClientMixin

from identity import keys, scopes
from identity.discovery import (
    AUTHORIZATION_CODE,
    CLIENT_CREDENTIALS,
    DEVICE_CODE,
    REFRESH_TOKEN,
    SECRET_AUTH_METHODS,
)
from identity.keys import CLI_CLIENT_ID, CONSOLE_CLIENT_ID
from storage import ApiKey

__all__ = [
    "CLI_CLIENT_ID",
    "CONSOLE_CLIENT_ID",
    "PUBLIC_CLIENT_IDS",
    "ConsoleUris",
    "KeyClient",
    "PublicClient",
    "is_loopback_uri",
]

PUBLIC_CLIENT_IDS = keys.RESERVED_CLIENT_IDS
# RFC 8252 7.3: http, a loopback host, any port, any path; nothing that could make a
# browser read the URI differently (userinfo, backslashes, fragments, spaces).
_LOOPBACK = re.compile(
    r"http://(?:127\.0\.0\.1|localhost|\[::1\])(?::(?P<port>[0-9]{1,5}))?"
    r"(?:/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?"
)
_MAX_URI_LENGTH = 2048


def is_loopback_uri(uri: str) -> bool:
    """True for an RFC 8252 loopback redirect URI (``http://127.0.0.1:<port>/...``)."""
    if len(uri) > _MAX_URI_LENGTH:
        return False
    match = _LOOPBACK.fullmatch(uri)
    if match is None:
        return False
    port = match.group("port")
    return port is None or 0 < int(port) <= 65535


@dataclass(frozen=True, slots=True)
class ConsoleUris:
    """Where ``promptsvc-console`` may send people: after sign-in (``redirect``) and
    after logout (``post_logout``). Checked by exact string comparison."""

    redirect: Collection[str] = field(default_factory=tuple)
    post_logout: Collection[str] = field(default_factory=tuple)


class KeyClient(ClientMixin):
    """An API key: confidential, client credentials only."""

    def __init__(self, key: ApiKey) -> None:
        self.key = key
        self.org = key.org

    @property
    def client_metadata(self) -> dict[str, Any]:
        return {}

    def get_client_id(self) -> str:
        return self.key.client_id

    def get_default_redirect_uri(self) -> None:
        return None

    def get_allowed_scope(self, scope: str | None) -> str:
        """The scope granted for ``scope``; raises identity's InvalidScope."""
        return scopes.grant(self.key.role, scope)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return keys.check_secret(self.key, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        # Revocation answers a key too (it has nothing to revoke: no refresh tokens).
        return method in SECRET_AUTH_METHODS and endpoint in (
            "token",
            "introspection",
            "revocation",
        )

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == CLIENT_CREDENTIALS


class PublicClient(ClientMixin):
    """A built-in public client of one realm (see the module docstring)."""

    def __init__(self, org: str, client_id: str, console: ConsoleUris) -> None:
        self.org = org
        self.client_id = client_id
        self._console = console

    @property
    def client_metadata(self) -> dict[str, Any]:
        # Authlib's end-session endpoint reads post-logout URIs from here.
        uris = list(self._console.post_logout) if self.client_id == CONSOLE_CLIENT_ID else []
        return {"post_logout_redirect_uris": uris}

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> None:
        return None  # a redirect_uri must always be given and match

    def get_allowed_scope(self, scope: str | None) -> str | None:
        """The asked scope if every name in it is one the realm knows (the person's
        role decides the rest once they have signed in), else None."""
        names = (scope or "").split()
        if len(scope or "") > 256 or any(n not in scopes.SUPPORTED_SCOPES for n in names):
            return None
        return " ".join(names)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        if self.client_id == CONSOLE_CLIENT_ID:
            return redirect_uri in self._console.redirect
        return is_loopback_uri(redirect_uri)

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        if grant_type == DEVICE_CODE:
            return self.client_id == CLI_CLIENT_ID
        return grant_type in (AUTHORIZATION_CODE, REFRESH_TOKEN)
