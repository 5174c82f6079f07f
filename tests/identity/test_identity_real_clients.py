"""The realm against clients nobody here wrote, over real HTTP: Authlib's OAuth 2.0
client (requests), python-keycloak's ``KeycloakOpenID`` and Authlib's strict discovery
validation. A person's browser is a ``requests.Session`` that opens the authorization
URL, fills in the login form and stops at the redirect to the client.

The server is the whole app (``create_app``) on a werkzeug LiveServer, its issuer URL
the server's own address, on each storage backend.

What python-keycloak's ``KeycloakOpenID`` can and cannot do here:

* works: ``well_known``, ``public_key``, ``certs``, ``decode_token``,
  ``token(grant_type="client_credentials")`` with a key (``scope`` may narrow),
  ``auth_url`` (with ``code_challenge``), ``token(grant_type="authorization_code",
  code=..., redirect_uri=..., code_verifier=...)`` for ``promptsvc-cli``,
  ``refresh_token``, ``userinfo``, ``logout`` (204), ``introspect`` (with a key, as in
  Keycloak, where only confidential clients introspect), ``device`` and polling with
  ``token(grant_type="urn:ietf:params:oauth:grant-type:device_code", device_code=...)``;
* cannot: ``token(username, password)`` (the password grant; people sign in on the
  login page, so the realm never sees a password outside it: 400
  ``unsupported_grant_type``), ``exchange_token`` (token exchange is not offered),
  ``entitlement`` and the UMA/authorization-services calls (Keycloak's own extensions,
  no endpoint here), and the admin API (``KeycloakAdmin``; users and keys are managed
  through ``/api/v1``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, quote_plus, urljoin, urlsplit

import httpx
import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session, OAuthError
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from authlib.oidc.core import CodeIDToken
from authlib.oidc.discovery import OpenIDProviderMetadata
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from flask import Flask
from joserfc import jwt as jose_jwt
from joserfc.jwk import KeySet
from keycloak import KeycloakOpenID
from keycloak.exceptions import KeycloakAuthenticationError, KeycloakPostError

from identity import Identity
from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.config import Settings
from tests.identity.identity_support import StorageFactory, seed_signing_key
from tests.identity.people_support import PASSWORD, form_in
from tests.servers import LiveServer

LOOPBACK = "http://127.0.0.1:8765/callback"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@dataclass
class Live:
    url: str
    identity: Identity

    def realm(self, path: str = "") -> str:
        return f"{self.url}/realms/acme{path}"


@pytest.fixture
def live(backend: str, make_storage: StorageFactory) -> Iterator[Live]:
    storage = make_storage(backend)
    seed_signing_key(storage)
    server = LiveServer(Flask("placeholder"))
    app = create_app(Settings(issuer_url=server.base_url), storage=storage)
    server.swap(app)
    with server:
        yield Live(server.base_url, app.extensions["identity"])


def browser_sign_in(authorization_url: str, username: str = "ada") -> str:
    """A person's browser: open the URL, submit the login form; the redirect it got."""
    with requests.Session() as browser:
        page = browser.get(authorization_url, timeout=10)
        assert page.status_code == 200, page.text[:2000]
        action, fields = form_in(page.text)
        answer = browser.post(
            urljoin(authorization_url, action),
            data={**fields, "username": username, "password": PASSWORD},
            allow_redirects=False,
            timeout=10,
        )
    assert answer.status_code == 302, answer.text[:2000]
    location: str = answer.headers["Location"]
    return location


def approve_device(verification_uri_complete: str, username: str = "ada") -> None:
    """A person's browser on the device page: sign in, look at the request, approve."""
    with requests.Session() as browser:
        page = browser.get(verification_uri_complete, timeout=10)
        action, fields = form_in(page.text)
        confirm = browser.post(
            urljoin(verification_uri_complete, action),
            data={**fields, "username": username, "password": PASSWORD},
            timeout=10,
        )  # redirected back to the page, now signed in: the confirmation
        assert "Approve" in confirm.text, confirm.text[:2000]
        action, fields = form_in(confirm.text)
        done = browser.post(
            urljoin(verification_uri_complete, action),
            data={**fields, "action": "approve"},
            timeout=10,
        )
    assert "connected" in done.text


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


# --------------------------------------------------------------------------- people


def test_authlib_client_code_flow_refresh_revoke(live: Live) -> None:
    """Authlib's OAuth2Session (requests): authorization code with PKCE, the id_token
    checked by Authlib's own OIDC claims, the API called with the session, a refresh,
    a revocation and the refused refresh after it."""
    live.identity.create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    meta = requests.get(live.realm("/.well-known/openid-configuration"), timeout=10).json()
    client = OAuth2Session(
        client_id="promptsvc-cli",
        redirect_uri=LOOPBACK,
        scope="openid prompts:read prompts:write",
        code_challenge_method="S256",
    )
    verifier, nonce = generate_token(48), generate_token(20)
    url, state = client.create_authorization_url(
        meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce
    )
    location = browser_sign_in(url)
    token = client.fetch_token(
        meta["token_endpoint"],
        authorization_response=location,
        code_verifier=verifier,
        state=state,  # Authlib compares it with the one in the redirect
    )
    assert token["token_type"] == "Bearer" and token["refresh_token"]

    keys = KeySet.import_key_set(requests.get(meta["jwks_uri"], timeout=10).json())
    decoded = jose_jwt.decode(token["id_token"], keys, algorithms=["RS256"])
    claims = CodeIDToken(
        decoded.claims,
        decoded.header,
        options={"iss": {"essential": True, "value": meta["issuer"]},
                 "aud": {"essential": True, "value": "promptsvc-cli"}},
        params={"nonce": nonce, "client_id": "promptsvc-cli",
                "access_token": token["access_token"]},
    )  # fmt: skip
    claims.validate(leeway=5)
    assert claims["preferred_username"] == "ada"

    assert client.get(f"{live.url}/api/v1/prompts", timeout=10).status_code == 200
    created = client.post(f"{live.url}/api/v1/prompts", json={"name": "from-authlib"}, timeout=10)
    assert created.status_code == 201, created.text

    renewed = client.refresh_token(meta["token_endpoint"])
    assert renewed["refresh_token"] != token["refresh_token"]
    assert client.get(f"{live.url}/api/v1/prompts/from-authlib", timeout=10).status_code == 200
    revoked = client.revoke_token(
        meta["revocation_endpoint"], token=renewed["refresh_token"], token_type_hint="refresh_token"
    )
    assert revoked.status_code == 200
    with pytest.raises(OAuthError) as caught:
        client.refresh_token(meta["token_endpoint"], refresh_token=renewed["refresh_token"])
    assert caught.value.error == "invalid_grant"


def test_keycloak_client_code_flow(live: Live) -> None:
    """python-keycloak as a public client: code flow with PKCE, userinfo, refresh,
    logout; introspection by a key."""
    live.identity.create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    kc = KeycloakOpenID(server_url=live.url, realm_name="acme", client_id="promptsvc-cli")
    verifier = generate_token(48)
    url = kc.auth_url(
        LOOPBACK,
        scope="openid",
        state="kc-state",
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
    )
    params = parse_qs(urlsplit(browser_sign_in(url)).query)
    assert params["state"] == ["kc-state"]
    token = kc.token(
        grant_type="authorization_code",
        code=params["code"][0],
        redirect_uri=LOOPBACK,
        code_verifier=verifier,
    )
    assert token["id_token"] and token["refresh_expires_in"] > 0
    info = kc.userinfo(token["access_token"])
    assert info["preferred_username"] == "ada"
    assert kc.decode_token(token["access_token"])["azp"] == "promptsvc-cli"
    renewed = kc.refresh_token(token["refresh_token"])
    assert renewed["refresh_token"] != token["refresh_token"]
    introspector = keycloak_client(live, SERVICE_READ)
    assert introspector.introspect(renewed["access_token"])["username"] == "ada"
    assert kc.logout(renewed["refresh_token"]) == {}
    assert introspector.introspect(renewed["access_token"]) == {"active": False}
    with pytest.raises(KeycloakPostError) as caught:
        kc.refresh_token(renewed["refresh_token"])
    assert caught.value.response_code == 400


def test_keycloak_client_calls_that_cannot_work(live: Live) -> None:
    live.identity.create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    kc = KeycloakOpenID(server_url=live.url, realm_name="acme", client_id="promptsvc-cli")
    with pytest.raises(KeycloakPostError) as password_grant:
        kc.token("ada", PASSWORD)  # the password grant: people sign in on the login page
    assert b"unsupported_grant_type" in password_grant.value.response_body
    with pytest.raises(KeycloakPostError) as exchange:
        kc.exchange_token("any-token", audience="promptsvc")
    assert b"unsupported_grant_type" in exchange.value.response_body
    with pytest.raises((KeycloakAuthenticationError, KeycloakPostError)) as public:
        kc.introspect("any-token")  # public clients cannot introspect (nor in Keycloak)
    assert public.value.response_code == 401


def test_keycloak_client_device_flow(live: Live) -> None:
    """The device flow end to end: python-keycloak starts it and polls, as RFC 8628 asks
    (waiting ``interval``, slower on slow_down), while the person approves in a browser."""
    live.identity.create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    kc = KeycloakOpenID(server_url=live.url, realm_name="acme", client_id="promptsvc-cli")
    started = kc.device(scope="openid")
    assert started["verification_uri"] == live.realm("/device")
    interval = started["interval"]
    answers: list[str] = []

    def poll() -> dict | None:
        nonlocal interval
        try:
            return kc.token(grant_type=DEVICE_GRANT, device_code=started["device_code"])
        except KeycloakPostError as exc:
            error = exc.response_body.decode()
            answers.append("slow_down" if "slow_down" in error else "pending")
            assert "authorization_pending" in error or "slow_down" in error, error
            if "slow_down" in error:
                interval += 5
            return None

    assert poll() is None  # pending
    approve_device(started["verification_uri_complete"])
    deadline = time.monotonic() + 60
    token = None
    while token is None and time.monotonic() < deadline:
        time.sleep(interval)
        token = poll()
    assert token is not None, answers
    assert kc.userinfo(token["access_token"])["preferred_username"] == "ada"
    with httpx.Client(base_url=live.url) as http:
        headers = {"Authorization": f"Bearer {token['access_token']}"}
        assert http.get("/api/v1/prompts", headers=headers).status_code == 200
