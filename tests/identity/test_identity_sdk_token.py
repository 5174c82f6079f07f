"""POST /v1/auth/sdk-token (docs/api.md section 3.1)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from identity import Identity
from identity.roles import SERVICE_ADMIN
from storage import ApiKey
from tests.clock import FakeClock
from tests.identity.identity_support import claims_of, token_request

PATH = "/v1/auth/sdk-token"
UNAUTHORIZED = {"code": "unauthorized", "message": "unauthorized", "error": "unauthorized"}


@pytest.fixture
def key(ident: Identity) -> tuple[ApiKey, str]:
    return ident.create_key("acme", SERVICE_ADMIN, "sdk")


def body_for(key: tuple[ApiKey, str], **changes: Any) -> dict[str, Any]:
    body = {"account_id": "acme", "key_id": key[0].client_id, "key_secret": key[1]}
    body.update(changes)
    return {k: v for k, v in body.items() if v is not ...}


def test_exchange(client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]) -> None:
    response = client.post(PATH, json=body_for(key))
    assert response.status_code == 200
    body = response.json
    assert set(body) == {"access_token", "expires_in", "token_type"}
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 300
    assert response.headers["Cache-Control"] == "no-store"
    principal = ident.verify(f"Bearer {body['access_token']}")
    assert (principal.org, principal.client_id, principal.user_id, principal.role) == (
        "acme",
        key[0].client_id,
        key[0].user_id,
        SERVICE_ADMIN,
    )


def test_same_tokens_as_the_realm(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str]
) -> None:
    sdk = client.post(PATH, json=body_for(key)).json["access_token"]
    realm = token_request(client, "acme", key[0].client_id, key[1]).json["access_token"]
    sdk_claims, realm_claims = claims_of(sdk), claims_of(realm)
    assert {k: v for k, v in sdk_claims.items() if k != "jti"} == {
        k: v for k, v in realm_claims.items() if k != "jti"
    }
    assert ident.verify(f"Bearer {sdk}") == ident.verify(f"Bearer {realm}")


def test_json_without_content_type_is_accepted(
    client: FlaskClient, key: tuple[ApiKey, str]
) -> None:
    import json

    response = client.post(PATH, data=json.dumps(body_for(key)), content_type="text/plain")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("data", "content_type"),
    [
        ("", "application/json"),
        ("not json", "application/json"),
        ("[1, 2]", "application/json"),
        ('"acme"', "application/json"),
        ("account_id=acme&key_id=x&key_secret=y", "application/x-www-form-urlencoded"),
    ],
)
def test_non_json_body(client: FlaskClient, data: str, content_type: str) -> None:
    response = client.post(PATH, data=data, content_type=content_type)
    assert response.status_code == 400
    body = response.json
    assert body["code"] == body["error"] == "bad_request"
    assert body["message"]


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"account_id": ...}, {"account_id": ["Missing data for required field."]}),
        ({"key_id": None}, {"key_id": ["Missing data for required field."]}),
        ({"key_secret": 123}, {"key_secret": ["Not a valid string."]}),
        ({"account_id": ["acme"]}, {"account_id": ["Not a valid string."]}),
        (
            {"key_id": {"x": 1}, "key_secret": ...},
            {"key_id": ["Not a valid string."], "key_secret": ["Missing data for required field."]},
        ),
    ],
)
def test_missing_or_non_string_fields(
    client: FlaskClient, key: tuple[ApiKey, str], changes: dict[str, Any], problem: dict[str, Any]
) -> None:
    response = client.post(PATH, json=body_for(key, **changes))
    assert response.status_code == 400
    body = response.json
    assert body["code"] == body["error"] == "bad_request"
    assert body["errors"] == problem


@pytest.mark.parametrize(
    "changes",
    [
        {"key_secret": "wrong-secret-wrong"},
        {"key_secret": ""},
        {"account_id": "globex"},  # unknown account
        {"account_id": "ACME"},
        {"account_id": ""},
        {"key_id": "nobody"},
    ],
)
def test_wrong_credentials(
    client: FlaskClient, key: tuple[ApiKey, str], changes: dict[str, Any]
) -> None:
    response = client.post(PATH, json=body_for(key, **changes))
    assert response.status_code == 401
    assert response.json == UNAUTHORIZED
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


def test_revoked_key(
    client: FlaskClient, ident: Identity, key: tuple[ApiKey, str], clock: FakeClock
) -> None:
    old = client.post(PATH, json=body_for(key)).json["access_token"]
    ident.revoke_key("acme", key[0].client_id)
    response = client.post(PATH, json=body_for(key))
    assert response.status_code == 401
    assert response.json == UNAUTHORIZED
    assert ident.verify(f"Bearer {old}").org == "acme"  # issued tokens live until exp


def test_extra_fields_are_ignored(client: FlaskClient, key: tuple[ApiKey, str]) -> None:
    assert client.post(PATH, json=body_for(key, role="Service Admin")).status_code == 200
