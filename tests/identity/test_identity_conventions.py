"""Keycloak and OIDC conventions real clients rely on: discovery, the realm document,
introspection, narrowed scopes, form-decoded HTTP Basic credentials."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote_plus

import pytest
from authlib.oidc.discovery import OpenIDProviderMetadata
from cryptography.hazmat.primitives.serialization import load_der_public_key
from flask import Flask
from flask.testing import FlaskClient

import identity
from identity import Identity, errors
from identity.errors import InvalidToken
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from storage import ApiKey, Storage
from tests.clock import FakeClock
from tests.identity.identity_support import (
    ISSUER,
    TOKEN_PATH,
    assert_oauth_error,
    claims_of,
    foreign_signing_key,
    shared_signing_key,
    sign,
    token_request,
)

INTROSPECT_PATH = "/realms/{org}/protocol/openid-connect/token/introspect"


@pytest.fixture
def key(ident: Identity) -> tuple[ApiKey, str]:
    return ident.create_key("acme", SERVICE_WRITE, "ci")


def _token(client: FlaskClient, key: tuple[ApiKey, str], **extra: str) -> str:
    response = token_request(client, key[0].org, key[0].client_id, key[1], **extra)
    assert response.status_code == 200, response.get_data(as_text=True)
    token: str = response.json["access_token"]
    return token


# --------------------------------------------------------------------------- discovery


def test_discovery_lists_every_endpoint(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    config = client.get("/realms/acme/.well-known/openid-configuration").json
    issuer = f"{ISSUER}/realms/acme"
    base = f"{issuer}/protocol/openid-connect"
    assert config["issuer"] == issuer
    assert {
        name: config[name]
        for name in (
            "authorization_endpoint",
            "token_endpoint",
            "introspection_endpoint",
            "userinfo_endpoint",
            "end_session_endpoint",
            "jwks_uri",
            "revocation_endpoint",
            "device_authorization_endpoint",
        )
    } == {
        "authorization_endpoint": f"{base}/auth",
        "token_endpoint": f"{base}/token",
        "introspection_endpoint": f"{base}/token/introspect",
        "userinfo_endpoint": f"{base}/userinfo",
        "end_session_endpoint": f"{base}/logout",
        "jwks_uri": f"{base}/certs",
        "revocation_endpoint": f"{base}/revoke",
        "device_authorization_endpoint": f"{base}/auth/device",
    }
    assert config["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:device_code",
    ]
    assert config["response_types_supported"] == ["code"]
    assert config["subject_types_supported"] == ["public"]
    assert config["id_token_signing_alg_values_supported"] == ["RS256"]
    assert config["code_challenge_methods_supported"] == ["S256"]
    assert config["token_endpoint_auth_methods_supported"] == [
        "client_secret_basic",
        "client_secret_post",
        "none",
    ]
    assert {"openid", "prompts:read", "prompts:write", "keys:manage"} <= set(
        config["scopes_supported"]
    )


@pytest.mark.parametrize("issuer", ["https://promptsvc.example", "http://127.0.0.1:8000"])
def test_discovery_passes_authlib_strict_validation(storage: Storage, issuer: str) -> None:
    """Authlib's validator insists on https (loopback excepted), as real clients do."""
    app = Flask("strict")
    ident = identity.init_app(app, storage, issuer_url=issuer)
    ident.create_key("acme", SERVICE_READ)
    config = app.test_client().get("/realms/acme/.well-known/openid-configuration").json
    OpenIDProviderMetadata(config).validate()  # raises ValueError naming any defect


def test_discovery_of_plain_http_is_refused_by_the_strict_validator(
    client: FlaskClient, key: tuple[ApiKey, str]
) -> None:
    """Proof the validator above can fail: the test issuer is plain http off loopback."""
    config = client.get("/realms/acme/.well-known/openid-configuration").json
    with pytest.raises(ValueError, match="https"):
        OpenIDProviderMetadata(config).validate()


# --------------------------------------------------------------------------- realm document


def test_realm_document(client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]) -> None:
    response = client.get("/realms/acme")
    assert response.status_code == 200
    body = response.json
    assert body == {
        "realm": "acme",
        "public_key": body["public_key"],
        "token-service": f"{ISSUER}/realms/acme/protocol/openid-connect",
        "account-service": f"{ISSUER}/account",
        "tokens-not-before": 0,
    }
    public_key = load_der_public_key(base64.b64decode(body["public_key"]))
    signer = ident.keyring.snapshot().signer.private_key
    assert public_key.public_numbers() == signer.public_key().public_numbers()  # type: ignore[union-attr]


@pytest.mark.parametrize("org", ["nope", "NOPE", "x" * 70])
def test_realm_document_of_an_unknown_realm_is_404(client: FlaskClient, org: str) -> None:
    response = client.get(f"/realms/{org}")
    assert response.status_code == 404
    assert response.json["code"] == "not_found"


# --------------------------------------------------------------------------- introspection


def _introspect(
    client: FlaskClient, key: tuple[ApiKey, str], token: str, org: str = "acme"
) -> dict:
    response = client.post(
        INTROSPECT_PATH.format(org=org),
        data={"token": token, "client_id": key[0].client_id, "client_secret": key[1]},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = response.json
    return body


def test_introspection_of_an_active_token(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]
) -> None:
    reader, reader_secret = ident.create_key("acme", SERVICE_READ)
    token = _token(client, (reader, reader_secret))
    body = _introspect(client, key, token)
    claims = claims_of(token)
    assert body["active"] is True
    assert body["client_id"] == reader.client_id
    assert body["token_type"] == "Bearer"
    for name in ("sub", "iss", "exp", "iat", "scope", "aud", "org", "roles", "jti"):
        assert body[name] == claims[name]


def test_introspection_with_basic_auth(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    token = _token(client, key)
    response = client.post(
        INTROSPECT_PATH.format(org="acme"), data={"token": token}, auth=(key[0].client_id, key[1])
    )
    assert response.status_code == 200
    assert response.json["active"] is True


def test_introspection_of_an_expired_token(
    client: FlaskClient, key: tuple[ApiKey, str], clock: FakeClock
) -> None:
    token = _token(client, key)
    clock.advance(300)
    assert _introspect(client, key, token) == {"active": False}


@pytest.mark.parametrize(
    "token", ["", "not-a-token", "a.b.c", "x" * 9000, "eyJhbGciOiJub25lIn0.e30."]
)
def test_introspection_of_a_malformed_token(
    client: FlaskClient, key: tuple[ApiKey, str], token: str
) -> None:
    assert _introspect(client, key, token) == {"active": False}


def test_introspection_of_another_realms_token(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]
) -> None:
    other = ident.create_key("globex", SERVICE_ADMIN)
    token = _token(client, other)
    assert _introspect(client, key, token) == {"active": False}
    # ...while globex's own key sees it active.
    assert _introspect(client, other, token, org="globex")["active"] is True


def test_introspection_of_another_issuers_token(
    client: FlaskClient, key: tuple[ApiKey, str], clock: FakeClock
) -> None:
    claims = claims_of(_token(client, key))
    forged = sign(claims, foreign_signing_key())
    assert _introspect(client, key, forged) == {"active": False}


def test_introspection_of_a_revoked_keys_token(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]
) -> None:
    reader = ident.create_key("acme", SERVICE_READ)
    token = _token(client, reader)
    ident.revoke_key("acme", reader[0].client_id)
    assert _introspect(client, key, token) == {"active": False}


def test_introspection_needs_a_key(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    token = _token(client, key)
    path = INTROSPECT_PATH.format(org="acme")
    for data in (
        {"token": token},
        {"token": token, "client_id": key[0].client_id},
        {"token": token, "client_id": key[0].client_id, "client_secret": "wrong-secret-123"},
    ):
        assert_oauth_error(client.post(path, data=data), 401, "invalid_client")


def test_introspection_bad_requests(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    path = INTROSPECT_PATH.format(org="acme")
    creds = {"client_id": key[0].client_id, "client_secret": key[1]}
    assert_oauth_error(client.post(path, data=creds), 400, "invalid_request")  # no token
    assert_oauth_error(client.post(path, json={**creds, "token": "x"}), 400, "invalid_request")
    hinted = client.post(path, data={**creds, "token": "x", "token_type_hint": "id_token"})
    assert_oauth_error(hinted, 400, "unsupported_token_type")
    assert client.get(path).status_code == 405


# --------------------------------------------------------------------------- scopes


@pytest.mark.parametrize(
    ("role", "asked", "granted", "acts_as"),
    [
        (SERVICE_WRITE, None, "prompts:read prompts:write", SERVICE_WRITE),
        (SERVICE_WRITE, "prompts:read", "prompts:read", SERVICE_READ),
        (SERVICE_WRITE, "openid", "openid prompts:read prompts:write", SERVICE_WRITE),
        (SERVICE_ADMIN, "prompts:read prompts:write", "prompts:read prompts:write", SERVICE_WRITE),
        (SERVICE_ADMIN, "email openid prompts:read", "openid email prompts:read", SERVICE_READ),
        (SERVICE_READ, "profile", "profile prompts:read", SERVICE_READ),
    ],
)
def test_scope_narrows(
    client: FlaskClient,
    ident: Identity,
    role: str,
    asked: str | None,
    granted: str,
    acts_as: str,
) -> None:
    key = ident.create_key("acme", role)
    extra = {"scope": asked} if asked is not None else {}
    response = token_request(client, "acme", key[0].client_id, key[1], **extra)
    assert response.status_code == 200
    assert response.json["scope"] == granted
    token = response.json["access_token"]
    assert claims_of(token)["scope"] == granted
    assert claims_of(token)["roles"] == [role]  # the holder's role is recorded as is
    assert ident.verify(f"Bearer {token}").role == acts_as


@pytest.mark.parametrize(
    ("role", "asked"),
    [
        (SERVICE_READ, "prompts:write"),
        (SERVICE_READ, "prompts:read keys:manage"),
        (SERVICE_WRITE, "keys:manage"),
        (SERVICE_ADMIN, "keys:manage"),  # allows nothing without prompts:read
        (SERVICE_ADMIN, "prompts:admin"),
        (SERVICE_ADMIN, "x" * 300),
    ],
)
def test_scope_beyond_the_role_is_invalid_scope(
    client: FlaskClient, ident: Identity, role: str, asked: str
) -> None:
    key = ident.create_key("acme", role)
    response = token_request(client, "acme", key[0].client_id, key[1], scope=asked)
    assert_oauth_error(response, 400, "invalid_scope")


def test_a_token_whose_scope_allows_nothing_is_refused(
    ident: Identity, key: tuple[ApiKey, str], client: FlaskClient
) -> None:
    claims = claims_of(_token(client, key))
    for scope in ("keys:manage", "openid", 7):
        forged = sign({**claims, "scope": scope}, shared_signing_key())
        with pytest.raises(InvalidToken) as caught:
            ident.verify(f"Bearer {forged}")
        assert caught.value.reason == errors.INVALID_CLAIMS


def test_sdk_token_is_not_narrowed(client: FlaskClient, ident: Identity) -> None:
    key = ident.create_key("acme", SERVICE_WRITE)
    response = client.post(
        "/v1/auth/sdk-token",
        json={"account_id": "acme", "key_id": key[0].client_id, "key_secret": key[1]},
    )
    token = response.json["access_token"]
    assert claims_of(token)["scope"] == "prompts:read prompts:write"


# --------------------------------------------------------------------------- HTTP Basic


def _basic(client_id: str, secret: str, quote: bool = True) -> str:
    pair = f"{quote_plus(client_id)}:{quote_plus(secret)}" if quote else f"{client_id}:{secret}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


@pytest.mark.parametrize(
    "secret",
    ["a secret with spaces", "plus+and space-16", "colon:in%secret&=x", "ünïcödé-sécret-long"],
)
def test_basic_credentials_are_form_decoded(
    client: FlaskClient, ident: Identity, secret: str
) -> None:
    key, _ = ident.create_key("acme", SERVICE_READ, client_id="odd.key", client_secret=secret)
    path = TOKEN_PATH.format(org="acme")
    encoded = client.post(
        path,
        data={"grant_type": "client_credentials"},
        headers={"Authorization": _basic(key.client_id, secret)},
    )
    assert encoded.status_code == 200, encoded.get_data(as_text=True)


def test_a_plus_in_basic_is_a_space(client: FlaskClient, ident: Identity) -> None:
    """RFC 6749 2.3.1: a client that sends the secret raw (with a literal '+') is
    sending a different secret than one with a space."""
    key, _ = ident.create_key("acme", SERVICE_READ, client_secret="plus+sign-secret-x")
    path = TOKEN_PATH.format(org="acme")
    raw = client.post(
        path,
        data={"grant_type": "client_credentials"},
        headers={"Authorization": _basic(key.client_id, "plus+sign-secret-x", quote=False)},
    )
    assert_oauth_error(raw, 401, "invalid_client")
    encoded = client.post(
        path,
        data={"grant_type": "client_credentials"},
        headers={"Authorization": _basic(key.client_id, "plus+sign-secret-x")},
    )
    assert encoded.status_code == 200


@pytest.mark.parametrize(
    "header", ["Basic ", "Basic bm9jb2xvbg==", "Basic %%%", "Basic " + "QQ" * 3000]
)
def test_malformed_basic_is_invalid_client(client: FlaskClient, header: str) -> None:
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        data={"grant_type": "client_credentials"},
        headers={"Authorization": header},
    )
    assert_oauth_error(response, 401, "invalid_client")
