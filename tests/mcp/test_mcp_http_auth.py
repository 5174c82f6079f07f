"""``promptsvc mcp --http`` as an OAuth resource server: every request carries a token of
the org's realm and acts as its caller. The official MCP client's OAuth support signs
a person in through the bundled issuer (discovery, RFC 7591 registration, authorization
code with PKCE), its redirect handler driving the realm's login form as a browser would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import jwt
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.types import CallToolResult

from tests.cli.test_cli_login import PASSWORD, Realm, browser_login, serve, user_id
from tests.client.sdk_support import shared_signing_key
from tests.identity.people_support import form_in
from tests.mcp.conftest import Service, _session, http, http_server
from tests.mcp.test_mcp_stdio import run, text_of

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}


def metadata_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"


def test_without_a_token_it_answers_401_pointing_at_its_metadata(service: Service) -> None:
    with http_server(service.read_env) as server:
        answer = httpx.post(server.url, json=INITIALIZE, headers=HEADERS)
        assert answer.status_code == 401
        challenge = answer.headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{metadata_url(server.url)}"' in challenge
        for where in (metadata_url(server.url), metadata_url(server.url).removesuffix("/mcp")):
            described = httpx.get(where)
            assert described.status_code == 200, where
            assert described.json()["resource"] == server.url
            assert described.json()["authorization_servers"] == [
                "http://promptsvc.test/realms/acme"
            ]
            assert described.json()["scopes_supported"] == ["openid"]


def _resign(token: str, **changes: object) -> str:
    """``token`` with ``changes`` to its claims, signed again with the realm's key."""
    claims = {**jwt.decode(token, options={"verify_signature": False}), **changes}
    key = shared_signing_key()
    return jwt.encode(claims, key.private_pem, algorithm="RS256", headers={"kid": key.kid})


def test_an_expired_forged_or_foreign_token_is_refused(service: Service) -> None:
    token = service.token(service.read_env)
    past = int(time.time()) - 3600
    refused = {
        "expired": _resign(token, iat=past - 300, exp=past),
        "another issuer": _resign(token, iss="http://elsewhere.test/realms/acme"),
        "another audience": _resign(token, aud="someone-else"),
        "not a token": "not-a-token",
        "tampered": token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"),
    }
    with http_server(service.read_env) as server:
        # Re-signed unchanged, a token still works: what is refused below is the change.
        ok = httpx.post(
            server.url,
            json=INITIALIZE,
            headers={**HEADERS, "Authorization": f"Bearer {_resign(token)}"},
        )
        assert ok.status_code == 200, ok.text
        for what, bad in refused.items():
            answer = httpx.post(
                server.url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {bad}"}
            )
            assert answer.status_code == 401, what
            assert "resource_metadata=" in answer.headers["WWW-Authenticate"], what


def test_origin_and_host_are_compared_exactly(service: Service) -> None:
    """DNS rebinding: a page elsewhere must not reach the server through the browser,
    however its name begins."""
    token = service.token(service.read_env)
    with http_server(service.read_env) as server:
        port = urlsplit(server.url).port
        auth = {**HEADERS, "Authorization": f"Bearer {token}"}

        def post(**headers: str) -> httpx.Response:
            return httpx.post(server.url, json=INITIALIZE, headers={**auth, **headers})

        assert post(Origin=f"http://127.0.0.1:{port}.evil.com").status_code == 403
        assert post(Origin=f"http://localhost:{port}@evil.com").status_code == 403
        assert post(Origin="http://evil.example").status_code == 403
        assert post(Host=f"127.0.0.1:{port}.evil.com").status_code == 421
        assert post(Host="evil.example").status_code == 421
        assert post(Origin=f"http://127.0.0.1:{port}").status_code == 200
        assert post(Origin=f"http://localhost:{port}").status_code == 200


@pytest.fixture
def realm(tmp_path: Path) -> Iterator[Realm]:
    """``promptsvc serve`` with ada (Service Write) and bob (Service Read); the MCP
    server runs with ada's saved login."""
    yield from serve(tmp_path, "memory://", {})


class Memory:
    """The MCP client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The person at the browser: signs in on the realm's page when sent there, and
    hands the redirect's ``code`` and ``state`` back to the MCP client."""

    def __init__(self, username: str) -> None:
        self.username = username
        self.landed: str | None = None
        self.visited: list[str] = []

    async def open(self, authorize: str) -> None:
        self.visited.append(authorize)
        async with httpx.AsyncClient(timeout=30) as browser:
            page = await browser.get(authorize)
            assert page.status_code == 200, page.text[:500]
            action, fields = form_in(page.text)
            signed_in = await browser.post(
                httpx.URL(authorize).join(action),
                data={**fields, "username": self.username, "password": PASSWORD},
            )
        assert signed_in.status_code == 302, signed_in.text[:500]
        self.landed = signed_in.headers["Location"]

    async def callback(self) -> AuthorizationCodeResult:
        assert self.landed is not None
        query = parse_qs(urlsplit(self.landed).query)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0]
        )


def _oauth(url: str, browser: Browser, storage: Memory) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="an MCP host",
            redirect_uris=["http://127.0.0.1:33418/callback"],
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )


def test_an_mcp_host_signs_a_person_in_through_the_realm(realm: Realm) -> None:
    assert browser_login(realm, "ada").returncode == 0  # what the MCP server runs with
    with httpx.Client(
        base_url=realm.url, headers={"Authorization": f"Bearer {realm.saved().access_token}"}
    ) as api:
        assert api.post("/api/v1/prompts", json={"name": "greeting"}).status_code == 201

    def as_person(url: str, username: str) -> tuple[Browser, Memory, list[CallToolResult]]:
        browser, storage = Browser(username), Memory()
        seen: list[CallToolResult] = []

        async def scenario() -> None:
            auth = _oauth(url, browser, storage)
            async with (
                httpx2.AsyncClient(auth=auth, timeout=30) as transport,
                streamable_http_client(url, http_client=transport) as (read, write),
                _session(read, write) as client,
            ):
                created = await client.session.call_tool(
                    "create_version", {"name": "greeting", "content": "Hi {{name}}"}
                )
                seen.append(created)
                if not created.is_error:
                    seen.append(
                        await client.session.call_tool(
                            "request_promotion", {"name": "greeting", "version": 1}
                        )
                    )

        run(scenario)
        return browser, storage, seen

    with http_server(realm.env) as server:
        browser, storage, (created,) = as_person(server.url, "bob")
        # bob (Service Read) signed in: the server acted as bob, not as ada's login.
        assert len(browser.visited) == 1
        assert storage.client is not None and storage.client.client_id.startswith("mcp~")
        assert storage.client.token_endpoint_auth_method == "none"
        assert storage.tokens is not None and storage.tokens.refresh_token
        assert created.is_error and text_of(created).startswith("forbidden: ")

        ada = user_id(realm)
        browser, storage, (created, promoted) = as_person(server.url, "ada")
        assert not created.is_error, text_of(created)
        assert not promoted.is_error, text_of(promoted)
        assert promoted.structured_content is not None
        assert promoted.structured_content["promotion"]["promoted_by"] == ada
        assert storage.client is not None and storage.tokens is not None
        claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
        assert claims["azp"] == storage.client.client_id and claims["sub"] == ada


def test_a_keys_token_works_and_a_read_key_cannot_write(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", production=1)

    async def scenario(url: str) -> None:
        async with http(url, service.token(service.read_env)) as reader:
            listed = await reader.session.list_prompts()
            assert [p.name for p in listed.prompts] == ["greeting"]
            refused = await reader.session.call_tool(
                "create_version", {"name": "greeting", "content": "Hey"}
            )
            assert refused.is_error and text_of(refused).startswith("forbidden: ")
        async with http(url, service.token(service.write_env)) as writer:
            created = await writer.session.call_tool(
                "create_version", {"name": "greeting", "content": "Hey"}
            )
            assert not created.is_error, text_of(created)

    with http_server(service.read_env) as server:
        run(lambda: scenario(server.url))
