"""The realm endpoints: token (client_credentials), certs, openid-configuration."""

from __future__ import annotations

import base64
import json
import threading

import httpx
import jwt
import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.serving import make_server

import identity
from identity import Identity, errors
from identity.errors import InvalidToken
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from storage import ApiKey, Storage
from tests.clock import FakeClock
from tests.identity.identity_support import (
    ISSUER,
    NO_STORE,
    TOKEN_PATH,
    assert_oauth_error,
    token_request,
)


@pytest.fixture
def key(ident: Identity) -> tuple[ApiKey, str]:
    return ident.create_key("acme", SERVICE_WRITE, "ci")


def test_client_secret_post(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str], clock: FakeClock
) -> None:
    api_key, secret = key
    response = token_request(client, "acme", api_key.client_id, secret)
    assert response.status_code == 200
    body = response.json
    assert body is not None
    assert set(body) == {
        "access_token",
        "expires_in",
        "refresh_expires_in",
        "token_type",
        "not-before-policy",
        "scope",
    }
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 300
    # Keycloak's fields: no refresh token for a key, no not-before policy.
    assert body["refresh_expires_in"] == 0
    assert body["not-before-policy"] == 0
    assert body["scope"] == "prompts:read prompts:write"
    for name, value in NO_STORE.items():
        assert response.headers[name] == value
    assert response.mimetype == "application/json"

    token = body["access_token"]
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "RS256"
    assert header["kid"]
    claims = jwt.decode(token, options={"verify_signature": False})
    now = int(clock())
    assert claims == {
        "iss": f"{ISSUER}/realms/acme",
        "sub": api_key.user_id,
        "azp": api_key.client_id,
        "org": "acme",
        "roles": [SERVICE_WRITE],
        "realm_access": {"roles": [SERVICE_WRITE]},
        "scope": "prompts:read prompts:write",
        "iat": now,
        "exp": now + 300,
        "jti": claims["jti"],
        "typ": "Bearer",
        "aud": "promptsvc",
    }
    assert ident.verify(f"Bearer {token}").client_id == api_key.client_id


def test_client_secret_basic(client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]) -> None:
    api_key, secret = key
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        data={"grant_type": "client_credentials"},
        auth=(api_key.client_id, secret),
    )
    assert response.status_code == 200
    assert ident.verify(f"Bearer {response.json['access_token']}").org == "acme"


def test_every_token_is_distinct(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    tokens = {token_request(client, "acme", key[0].client_id, key[1]).json["access_token"]}
    tokens.add(token_request(client, "acme", key[0].client_id, key[1]).json["access_token"])
    assert len(tokens) == 2  # distinct jti even within one second


def test_an_external_client_can_verify_with_the_jwks(
    client: FlaskClient, key: tuple[ApiKey, str]
) -> None:
    """What a third party does: discovery -> JWKS -> PyJWT, no promptsvc code."""
    token = token_request(client, "acme", key[0].client_id, key[1]).json["access_token"]
    config = client.get("/realms/acme/.well-known/openid-configuration").json
    jwks_path = config["jwks_uri"].removeprefix(ISSUER)
    jwk_set = jwt.PyJWKSet.from_dict(client.get(jwks_path).json)
    signing_key = jwk_set[jwt.get_unverified_header(token)["kid"]]
    claims = jwt.decode(
        token, signing_key, algorithms=["RS256"], audience="promptsvc", issuer=config["issuer"]
    )
    assert claims["azp"] == key[0].client_id


@pytest.mark.parametrize("secret_change", ["wrong", "", "x" * 600])
def test_wrong_secret(client: FlaskClient, key: tuple[ApiKey, str], secret_change: str) -> None:
    api_key, secret = key
    wrong = secret_change if secret_change != "wrong" else secret[:-1] + "x"
    if not wrong:
        # An empty secret is a missing field.
        assert_oauth_error(
            token_request(client, "acme", api_key.client_id, wrong), 400, "invalid_request"
        )
        return
    response = token_request(client, "acme", api_key.client_id, wrong)
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["WWW-Authenticate"].startswith("Basic ")


def test_wrong_secret_basic(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        data={"grant_type": "client_credentials"},
        auth=(key[0].client_id, "not-the-secret"),
    )
    assert_oauth_error(response, 401, "invalid_client")


def test_malformed_basic_header(client: FlaskClient) -> None:
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        data={"grant_type": "client_credentials"},
        headers={"Authorization": "Basic !!!not-base64"},
    )
    assert_oauth_error(response, 401, "invalid_client")


def test_unknown_client(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    assert_oauth_error(token_request(client, "acme", "nobody", key[1]), 401, "invalid_client")


@pytest.mark.parametrize("org", ["nope", "Not-A-Slug", "a" * 64, "-x"])
def test_unknown_realm(client: FlaskClient, key: tuple[ApiKey, str], org: str) -> None:
    assert_oauth_error(token_request(client, org, key[0].client_id, key[1]), 401, "invalid_client")


def test_wrong_realm_in_the_token_url(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]
) -> None:
    """acme's credentials at an existing other realm get nothing, even with a twin id."""
    ident.create_key("globex", SERVICE_READ)
    assert_oauth_error(
        token_request(client, "globex", key[0].client_id, key[1]), 401, "invalid_client"
    )
    ident.create_key("globex", SERVICE_ADMIN, client_id=key[0].client_id)
    assert_oauth_error(
        token_request(client, "globex", key[0].client_id, key[1]), 401, "invalid_client"
    )


def test_failures_cannot_be_told_apart(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]
) -> None:
    revoked, revoked_secret = ident.create_key("acme", SERVICE_READ)
    ident.revoke_key("acme", revoked.client_id)
    bodies = [
        token_request(client, "acme", key[0].client_id, "wrong-secret-123").json,
        token_request(client, "acme", "nobody", key[1]).json,
        token_request(client, "nope", key[0].client_id, key[1]).json,
        token_request(client, "acme", revoked.client_id, revoked_secret).json,
    ]
    assert all(body == bodies[0] for body in bodies)


def test_revoked_key(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str], clock: FakeClock
) -> None:
    api_key, secret = key
    old = token_request(client, "acme", api_key.client_id, secret).json["access_token"]
    ident.revoke_key("acme", api_key.client_id)
    # New token requests fail at once, both ways...
    assert_oauth_error(
        token_request(client, "acme", api_key.client_id, secret), 401, "invalid_client"
    )
    with pytest.raises(errors.InvalidClient):
        ident.issue_token("acme", api_key.client_id, secret)
    # ...while the token issued before stays valid until it expires (first seen here).
    clock.advance(299)
    assert ident.verify(f"Bearer {old}").client_id == api_key.client_id
    clock.advance(1)
    with pytest.raises(InvalidToken) as caught:
        ident.verify(f"Bearer {old}")
    assert caught.value.reason == errors.EXPIRED


def test_json_body_is_invalid_request(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        json={
            "grant_type": "client_credentials",
            "client_id": key[0].client_id,
            "client_secret": key[1],
        },
    )
    assert_oauth_error(response, 400, "invalid_request")


def test_multipart_body_is_invalid_request(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        data={"grant_type": "client_credentials", "client_id": key[0].client_id},
        content_type="multipart/form-data",
    )
    assert_oauth_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"client_id": "x", "client_secret": "y"},  # no grant_type
        {"grant_type": "client_credentials"},  # no credentials at all
        {"grant_type": "client_credentials", "client_id": "x"},
        {"grant_type": "client_credentials", "client_secret": "y"},
    ],
)
def test_missing_fields(client: FlaskClient, data: dict[str, str]) -> None:
    assert_oauth_error(
        client.post(TOKEN_PATH.format(org="acme"), data=data), 400, "invalid_request"
    )


def test_credentials_in_the_query_string_do_not_count(
    client: FlaskClient, key: tuple[ApiKey, str]
) -> None:
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        query_string={"client_id": key[0].client_id, "client_secret": key[1]},
        data={"grant_type": "client_credentials"},
    )
    assert_oauth_error(response, 400, "invalid_request")


def test_repeated_parameter(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    body = (
        f"grant_type=client_credentials&client_id={key[0].client_id}"
        f"&client_secret={key[1]}&client_secret=other"
    )
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        data=body,
        content_type="application/x-www-form-urlencoded",
    )
    assert_oauth_error(response, 400, "invalid_request")


def test_two_authentication_methods(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        data={"grant_type": "client_credentials", "client_secret": key[1]},
        auth=(key[0].client_id, key[1]),
    )
    assert_oauth_error(response, 400, "invalid_request")


@pytest.mark.parametrize("grant", ["password", "implicit", "CLIENT_CREDENTIALS", "x" * 300])
def test_unsupported_grant_type(client: FlaskClient, key: tuple[ApiKey, str], grant: str) -> None:
    response = token_request(client, "acme", key[0].client_id, key[1], grant_type=grant)
    assert_oauth_error(response, 400, "unsupported_grant_type")


@pytest.mark.parametrize(
    "grant",
    ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"],
)
def test_a_key_cannot_use_the_people_grants(
    client: FlaskClient, key: tuple[ApiKey, str], grant: str
) -> None:
    response = token_request(
        client, "acme", key[0].client_id, key[1], grant_type=grant, code="x", refresh_token="x",
        device_code="x",
    )  # fmt: skip
    assert_oauth_error(response, 400, "unauthorized_client")


def test_plain_http_behind_a_proxy_works(app: Flask, key: tuple[ApiKey, str]) -> None:
    """Authlib alone refuses http URLs that are not loopback; TLS is the deployment's
    business (a TLS-terminating proxy makes Flask see http://internal-name)."""
    client = app.test_client()
    response = client.post(
        TOKEN_PATH.format(org="acme"),
        base_url="http://promptsvc.internal:8000",
        data={"grant_type": "client_credentials"},
        auth=(key[0].client_id, key[1]),
    )
    assert response.status_code == 200


def test_get_on_token_endpoint_is_not_allowed(client: FlaskClient) -> None:
    assert client.get(TOKEN_PATH.format(org="acme")).status_code == 405


def test_certs_public_parts_only(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]
) -> None:
    response = client.get("/realms/acme/protocol/openid-connect/certs")
    assert response.status_code == 200
    keys = response.json["keys"]
    assert len(keys) == 1
    (jwk,) = keys
    assert set(jwk) == {"kty", "n", "e", "kid", "use", "alg"}
    assert (jwk["kty"], jwk["use"], jwk["alg"]) == ("RSA", "sig", "RS256")
    private_pem = ident.keyring.snapshot().signer.record.private_pem
    assert private_pem not in response.get_data(as_text=True)
    # n is a 2048-bit modulus
    n = base64.urlsafe_b64decode(jwk["n"] + "==")
    assert len(n) == 256


@pytest.mark.parametrize(
    "path",
    [
        "/realms/{org}/protocol/openid-connect/certs",
        "/realms/{org}/.well-known/openid-configuration",
    ],
)
@pytest.mark.parametrize("org", ["nope", "NOPE", "x" * 70])
def test_unknown_realm_is_404(
    client: FlaskClient, key: tuple[ApiKey, str], path: str, org: str
) -> None:
    response = client.get(path.format(org=org))
    assert response.status_code == 404
    body = response.json
    assert body["code"] == body["error"] == "not_found"
    assert "realm" in body["message"]


def test_realm_exists_once_it_has_a_key_even_revoked(client: FlaskClient, ident: Identity) -> None:
    path = "/realms/fresh/.well-known/openid-configuration"
    assert client.get(path).status_code == 404
    key, _ = ident.create_key("fresh", SERVICE_READ)
    ident.revoke_key("fresh", key.client_id)
    assert client.get(path).status_code == 200


def test_token_lifetime_is_configurable(storage: Storage, clock: FakeClock) -> None:
    app = Flask("lifetime")
    ident = identity.init_app(app, storage, issuer_url=ISSUER, token_lifetime=60, clock=clock)
    api_key, secret = ident.create_key("acme", SERVICE_READ)
    body = token_request(app.test_client(), "acme", api_key.client_id, secret).json
    assert body["expires_in"] == 60
    claims = json.loads(base64.urlsafe_b64decode(body["access_token"].split(".")[1] + "=="))
    assert claims["exp"] - claims["iat"] == 60


def test_over_real_http(app: Flask, ident: Identity, key: tuple[ApiKey, str]) -> None:
    """The endpoints behind a real server on loopback, as clients meet them."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}") as http:
            basic = http.post(
                TOKEN_PATH.format(org="acme"),
                data={"grant_type": "client_credentials"},
                auth=(key[0].client_id, key[1]),
            )
            sdk = http.post(
                "/v1/auth/sdk-token",
                json={"account_id": "acme", "key_id": key[0].client_id, "key_secret": key[1]},
            )
            wrong = http.post(
                TOKEN_PATH.format(org="acme"),
                data={"grant_type": "client_credentials"},
                auth=(key[0].client_id, "wrong-secret-value"),
            )
            certs = http.get("/realms/acme/protocol/openid-connect/certs")
    finally:
        server.shutdown()
        thread.join()
    assert basic.status_code == 200
    assert basic.headers["cache-control"] == "no-store"
    assert sdk.status_code == 200
    for body in (basic.json(), sdk.json()):
        assert ident.verify(f"Bearer {body['access_token']}").org == "acme"
    assert wrong.status_code == 401
    assert wrong.json()["error"] == "invalid_client"
    assert (
        certs.json()["keys"][0]["kid"]
        == jwt.get_unverified_header(sdk.json()["access_token"])["kid"]
    )
