"""RFC 7591 dynamic client registration of public clients (MCP hosts signing people in).

An MCP host that meets ``promptsvc mcp --http`` finds this realm as its authorization
server and registers itself before the authorization code flow (the MCP authorization
specification). Registration is open and keeps nothing: a registered client is a
public client (no secret, ``token_endpoint_auth_method`` ``none``, authorization code
with PKCE and refresh tokens) whose ``client_id`` carries what the realm must know
about it, signed with a secret kept in storage, so every worker and host accepts it.

* Loopback redirect URIs (``http://127.0.0.1:<port>/...``, ``localhost``, ``[::1]``)
  are accepted with any port and path, as for ``promptsvc-cli`` (RFC 8252 7.3: a native
  app's port changes from run to run), so the id carries none of them.
* ``https`` redirect URIs are carried in the id and compared exactly.

A registered client's tokens are a person's, like the built-in public clients'.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint, InvalidClientMetadataError
from authlib.oauth2.rfc7591.errors import InvalidRedirectURIError

from identity import discovery
from identity.clients import ConsoleUris, PublicClient, is_loopback_uri
from identity.keys import REGISTERED_PREFIX
from identity.realm_context import RealmContext
from storage import Storage

# A client id fits where storage keeps one (200 characters).
MAX_CLIENT_ID = 200
_SEPARATOR = "~"
_MAC_BYTES = 16
_LABEL = b"promptsvc client registration\n"
# Registration fields answered back as they were sent, besides redirect_uris.
ECHOED = ("client_name", "scope")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _key(storage: Storage) -> bytes:
    secret = storage.ensure_session_secret(secrets.token_urlsafe(32))
    return hmac.new(secret.encode(), _LABEL, hashlib.sha256).digest()


def _mac(storage: Storage, org: str, payload: str) -> str:
    message = f"{org}\n{payload}".encode()
    return _b64(hmac.new(_key(storage), message, hashlib.sha256).digest()[:_MAC_BYTES])


def is_https_uri(uri: str) -> bool:
    """An absolute https URI without userinfo or fragment (RFC 6749 3.1.2)."""
    if len(uri) > 512 or any(c.isspace() or c == "\\" for c in uri):
        return False
    parts = urlsplit(uri)
    return (
        parts.scheme == "https"
        and bool(parts.hostname)
        and "@" not in parts.netloc
        and (not parts.fragment and "#" not in uri)
    )


def client_id_for(storage: Storage, org: str, https_uris: list[str]) -> str:
    """The id of a client of ``org`` with these https redirect URIs."""
    payload = _b64(json.dumps(https_uris, separators=(",", ":")).encode()) if https_uris else ""
    parts = [REGISTERED_PREFIX.rstrip(_SEPARATOR), _mac(storage, org, payload)]
    if payload:
        parts.append(payload)
    return _SEPARATOR.join(parts)


def https_uris_of(storage: Storage, org: str, client_id: str) -> list[str] | None:
    """The https redirect URIs a registered ``client_id`` of ``org`` carries; None when
    the id was not issued by this realm."""
    if len(client_id) > MAX_CLIENT_ID or not client_id.startswith(REGISTERED_PREFIX):
        return None
    mac, _, payload = client_id[len(REGISTERED_PREFIX) :].partition(_SEPARATOR)
    if not hmac.compare_digest(mac, _mac(storage, org, payload)):
        return None
    if not payload:
        return []
    try:
        uris = json.loads(_unb64(payload))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        return None
    return uris


class RegisteredClient(PublicClient):
    """A client registered here (module docstring)."""

    def __init__(self, org: str, client_id: str, https_uris: list[str]) -> None:
        super().__init__(org, client_id, ConsoleUris())
        self.https_uris = https_uris

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return is_loopback_uri(redirect_uri) or redirect_uri in self.https_uris

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (discovery.AUTHORIZATION_CODE, discovery.REFRESH_TOKEN)


def registered_client(storage: Storage, org: str, client_id: str) -> RegisteredClient | None:
    uris = https_uris_of(storage, org, client_id)
    return None if uris is None else RegisteredClient(org, client_id, uris)


class Registration(ClientRegistrationEndpoint):
    """Authlib's RFC 7591 endpoint: open, public clients only, nothing stored."""

    def __init__(self, server: RealmContext) -> None:
        super().__init__(server)
        self.realm = server

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration: a public client can do nothing a person does not

    def get_server_metadata(self) -> dict[str, Any]:
        org = self.realm.current_org()
        return discovery.openid_configuration(self.realm.identity.issuer(org))

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        if not self.realm.identity.org_exists(self.realm.current_org()):
            raise InvalidClientMetadataError("unknown realm")
        # The realm substitutes what a public client is (RFC 7591 3.2.1 allows it), so a
        # host that asked for a secret gets a client without one rather than a refusal.
        data = request.payload.data  # a JSON object: the view checked
        data.pop("token_endpoint_auth_method", None)
        data.pop("grant_types", None)
        uris = data.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            raise InvalidRedirectURIError("redirect_uris must be a list of URIs")
        try:
            metadata: dict[str, Any] = super().extract_client_metadata(request)
        except (TypeError, AttributeError, ValueError):  # Authlib's claims meeting wrong types
            raise InvalidClientMetadataError("a field has the wrong type") from None
        for uri in uris:
            if not (is_loopback_uri(uri) or is_https_uri(uri)):
                raise InvalidRedirectURIError(
                    "redirect URIs must be loopback (http://127.0.0.1:PORT/...) or https"
                )
        request.https_uris = [uri for uri in uris if not is_loopback_uri(uri)]
        # Only what the realm keeps to is echoed (nothing else is kept: RFC 7591 3.2.1).
        kept = {name: metadata[name] for name in ECHOED if isinstance(metadata.get(name), str)}
        if any("\x00" in text for text in (*uris, *kept.values())):
            raise InvalidClientMetadataError("NUL is not allowed")
        return {
            "redirect_uris": uris,
            **kept,
            "token_endpoint_auth_method": "none",
            "grant_types": [discovery.AUTHORIZATION_CODE, discovery.REFRESH_TOKEN],
            "response_types": ["code"],
        }

    def generate_client_id(self, request: Any) -> str:
        org = self.realm.current_org()
        client_id = client_id_for(self.realm.identity.storage, org, request.https_uris)
        if len(client_id) > MAX_CLIENT_ID:
            raise InvalidRedirectURIError("the https redirect URIs are too long together")
        return client_id

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        info.pop("client_secret", None)  # a public client
        info.pop("client_secret_expires_at", None)
        return info

    def generate_client_secret(self, request: Any) -> None:
        return None

    def save_client(self, client_info: Any, client_metadata: Any, request: Any) -> None:
        return None  # the client id carries what the realm needs
