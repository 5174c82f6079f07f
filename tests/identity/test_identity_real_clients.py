"""The realm against clients nobody here wrote, over real HTTP: python-keycloak's
``KeycloakOpenID`` and Authlib's strict discovery validation.

The server is the whole app (``create_app``) on a werkzeug LiveServer, its issuer URL
the server's own address, on each storage backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote_plus

import httpx
import pytest
from authlib.oidc.discovery import OpenIDProviderMetadata
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from flask import Flask
from keycloak import KeycloakOpenID
from keycloak.exceptions import KeycloakPostError

from identity import Identity
from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.config import Settings
from tests.identity.identity_support import StorageFactory, seed_signing_key
from tests.servers import LiveServer

BACKENDS = ["memory", "fakeredis", "redis"]


@dataclass
class Live:
    url: str
    identity: Identity


@pytest.fixture(params=BACKENDS)
def live(request: pytest.FixtureRequest, make_storage: StorageFactory) -> Iterator[Live]:
    storage = make_storage(request.param)
    seed_signing_key(storage)
    server = LiveServer(Flask("placeholder"))
    app = create_app(Settings(issuer_url=server.base_url), storage=storage)
    server.swap(app)
    with server:
        yield Live(server.base_url, app.extensions["identity"])


def keycloak_client(live: Live, role: str = SERVICE_WRITE, **kwargs: str) -> KeycloakOpenID:
    key, secret = live.identity.create_key("acme", role, **kwargs)
    return KeycloakOpenID(
        server_url=live.url, realm_name="acme", client_id=key.client_id, client_secret_key=secret
    )


def test_keycloak_well_known_passes_strict_validation(live: Live) -> None:
    config = keycloak_client(live).well_known()
    assert config["issuer"] == f"{live.url}/realms/acme"
    OpenIDProviderMetadata(config).validate()


def test_keycloak_public_key_verifies_tokens(live: Live) -> None:
    """python-keycloak's documented recipe: wrap public_key() in PEM armour and decode."""
    client = keycloak_client(live)
    pem = f"-----BEGIN PUBLIC KEY-----\n{client.public_key()}\n-----END PUBLIC KEY-----"
    assert load_pem_public_key(pem.encode()) is not None
    token = client.token(grant_type="client_credentials")
    assert token["token_type"] == "Bearer"
    assert token["refresh_expires_in"] == 0
    assert token["not-before-policy"] == 0
    # python-keycloak sends scope=openid by default: accepted, kept, grants nothing extra.
    assert token["scope"] == "openid prompts:read prompts:write"
    claims = client.decode_token(token["access_token"], validate=True)
    assert claims["iss"] == f"{live.url}/realms/acme"
    assert claims["roles"] == [SERVICE_WRITE]


def test_keycloak_token_narrowed_and_used_on_the_api(live: Live) -> None:
    client = keycloak_client(live)
    token = client.token(grant_type="client_credentials", scope="openid prompts:read")
    headers = {"Authorization": f"Bearer {token['access_token']}"}
    with httpx.Client(base_url=live.url) as http:
        assert http.get("/api/v1/prompts", headers=headers).status_code == 200
        created = http.post("/api/v1/prompts", json={"name": "x"}, headers=headers)
    assert created.status_code == 403


def test_keycloak_token_beyond_the_role_fails(live: Live) -> None:
    client = keycloak_client(live, SERVICE_READ)
    with pytest.raises(KeycloakPostError) as caught:
        client.token(grant_type="client_credentials", scope="prompts:write")
    assert caught.value.response_code == 400
    assert b"invalid_scope" in caught.value.response_body


def test_keycloak_token_with_a_secret_needing_encoding(live: Live) -> None:
    """python-keycloak posts the secret in the form; a space and a '+' survive."""
    client = keycloak_client(live, client_secret="with space+plus sign")
    assert client.token(grant_type="client_credentials")["access_token"]


def test_keycloak_introspect(live: Live) -> None:
    client = keycloak_client(live)
    token = client.token(grant_type="client_credentials")["access_token"]
    info = client.introspect(token)
    assert info["active"] is True
    assert info["client_id"] == client.client_id
    assert info["scope"] == "openid prompts:read prompts:write"
    assert client.introspect(token[:-4] + "AAAA") == {"active": False}
    other = KeycloakOpenID(
        server_url=live.url,
        realm_name="globex",
        client_id=(globex := live.identity.create_key("globex", SERVICE_READ))[0].client_id,
        client_secret_key=globex[1],
    )
    assert other.introspect(token) == {"active": False}


def test_basic_auth_from_httpx_with_strict_encoding(live: Live) -> None:
    """httpx's BasicAuth does not form-encode; a client that does (RFC 6749 2.3.1) is
    what the realm must understand, so encode by hand as such clients do."""
    key, secret = live.identity.create_key("acme", SERVICE_READ, client_secret="a b+c secret! xyz")
    auth = httpx.BasicAuth(quote_plus(key.client_id), quote_plus(secret))
    with httpx.Client(base_url=live.url) as http:
        r = http.post(
            "/realms/acme/protocol/openid-connect/token",
            data={"grant_type": "client_credentials"},
            auth=auth,
        )
    assert r.status_code == 200, r.text
