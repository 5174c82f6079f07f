"""Helpers shared by the identity tests."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from functools import cache
from typing import Any

import jwt
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from identity.signing import new_signing_key, parse_key
from storage import SigningKey, Storage, utcnow

ISSUER = "http://issuer.test"
StorageFactory = Callable[[str], Storage]
TOKEN_PATH = "/realms/{org}/protocol/openid-connect/token"


@cache
def shared_signing_key() -> SigningKey:
    return new_signing_key(utcnow())


@cache
def foreign_signing_key() -> SigningKey:
    """A key no storage of ours holds (another deployment's)."""
    return new_signing_key(utcnow())


def seed_signing_key(store: Storage) -> SigningKey:
    return store.ensure_signing_key(shared_signing_key())


def token_request(
    client: FlaskClient, org: str, client_id: str, secret: str, **extra: str
) -> TestResponse:
    data = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    data.update(extra)
    return client.post(TOKEN_PATH.format(org=org), data=data)


def sign(claims: dict[str, Any], key: SigningKey, **header: Any) -> str:
    """An RS256 token over ``claims`` with ``key`` (kid = the key's unless given)."""
    headers = {"kid": key.kid, **header}
    # PyJWS, not jwt.encode: the tests need claims jwt.encode refuses (a non-string iss).
    payload = json.dumps(claims).encode()
    return jwt.PyJWS().encode(payload, parse_key(key).private_key, "RS256", headers)


def claims_of(token: str) -> dict[str, Any]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


def segment(value: dict[str, Any]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def reassemble(token: str, *, header: dict[str, Any] | None = None, payload: Any = None) -> str:
    """The token with its header and/or payload replaced, signature kept."""
    head, body, signature = token.split(".")
    if header is not None:
        head = segment(header)
    if payload is not None:
        body = segment(payload)
    return f"{head}.{body}.{signature}"


NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def assert_oauth_error(response: TestResponse, status: int, error: str) -> None:
    """An RFC 6749 error body with our code/message, not to be cached."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.json
    assert body is not None
    assert set(body) == {"error", "error_description", "code", "message"}
    assert body["error"] == body["code"] == error
    assert body["error_description"] == body["message"]
    assert body["message"]
    for name, value in NO_STORE.items():
        assert response.headers[name] == value
