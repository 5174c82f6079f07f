"""Who a Streamable HTTP request comes from: a bearer token of the org's realm.

The MCP server is an OAuth resource server (the MCP authorization specification):
the realm of the org it serves is its authorization server. A token is verified
here as the service verifies it (docs/api.md, tokens): RS256 signature with the
realm's published keys, issuer, audience and expiry, never a call per request. The
request then reaches the service with that same token (:class:`CallerToken`), so the
caller's role and person are what the service sees.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from promptsvc.cli.connection import CredentialsError
from promptsvc.client import AuthenticationError
from promptsvc.client.auth import TokenProvider
from promptsvc.client.flow import Flow, RetryPolicy
from promptsvc.client.management import ServiceClient

AUDIENCE = "promptsvc"
ALGORITHMS = ["RS256"]
# How long the realm's published keys are kept before they are fetched again; an
# unknown ``kid`` (a rotated key) fetches them at once.
KEYS_LIFESPAN = 300
# Scopes an MCP host asks for when it signs a person in: only what any user may ask for.
# A person's role comes from the user, so asking for no API scope gets all of it.
SCOPES_SUPPORTED = ["openid"]


@dataclass(frozen=True)
class Realm:
    """The org's realm as its discovery document names it (``issuer``), and where its
    signing keys are read (on the service the MCP server talks to)."""

    issuer: str
    jwks_url: str


def discover(client: ServiceClient, org: str) -> Realm:
    """The realm of ``org`` at the service ``client`` talks to; CredentialsError when its
    discovery document cannot be read."""
    base = f"{client.base_url}/realms/{quote(org, safe='')}"
    url = f"{base}/.well-known/openid-configuration"
    try:
        answer = httpx.get(url, timeout=10.0)
        answer.raise_for_status()
        issuer = answer.json()["issuer"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise CredentialsError(f"the realm's discovery document {url} is unusable: {exc}") from None
    return Realm(issuer=str(issuer), jwks_url=f"{base}/protocol/openid-connect/certs")


class RealmTokens:
    """The SDK's ``TokenVerifier``: an access token of the realm, or None."""

    def __init__(self, realm: Realm) -> None:
        self.realm = realm
        self._keys = jwt.PyJWKClient(realm.jwks_url, lifespan=KEYS_LIFESPAN, timeout=10)

    async def verify_token(self, token: str) -> AccessToken | None:
        return await anyio.to_thread.run_sync(self.verify, token)

    def verify(self, token: str) -> AccessToken | None:
        try:
            key = self._keys.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=ALGORITHMS,
                audience=AUDIENCE,
                issuer=self.realm.issuer,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError:  # bad signature, expired, foreign, malformed, keys unreachable
            return None
        scope = claims.get("scope")
        return AccessToken(
            token=token,
            client_id=str(claims.get("azp") or ""),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=int(claims["exp"]),
            subject=str(claims["sub"]),
            claims=claims,
        )


class CallerToken(TokenProvider):
    """The token of the MCP request being served (the SDK keeps it per request, and a
    worker thread started for the request sees it). It cannot be renewed here: when
    the service refuses it, the call fails as unauthorized and the MCP host signs in
    again."""

    def __init__(self) -> None:
        super().__init__(refresh_buffer=0, clock=time.monotonic)

    def current(self) -> str | None:
        token = get_access_token()
        return None if token is None else token.token

    def token_request(self) -> httpx.Request:  # pragma: no cover - never asked: see below
        raise NotImplementedError

    def refresh_flow(self, policy: RetryPolicy, deadline: float) -> Flow[str]:
        raise AuthenticationError(
            "the service refused the caller's token", status=401, code="unauthorized"
        )
