"""Fixtures for the API tests: an app on each backend, real tokens, a JSON client.

Every test using ``app`` (or ``client``/``tokens``) runs once on MemoryStorage and once
on the real Redis (``redis_url``). Tokens are real: keys are made with
``Identity.create_key`` and exchanged with ``Identity.issue_token``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask
from flask.testing import FlaskClient

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.config import Settings
from storage import Storage
from storage.memory import MemoryStorage
from tests.sql_support import sql_storage

ISSUER = "http://promptsvc.test"


@pytest.fixture(scope="session")
def signing_key_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One RSA key for the whole run: generating one per app would dominate test time."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = Path(tmp_path_factory.mktemp("keys")) / "signing.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(path)


@pytest.fixture(params=["memory", "redis", "sqlite"])
def backend(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """Each storage backend in turn; the Redis one on the flushed test db, SQLite (the
    default storage) as tests/sql_support.py makes it. PostgreSQL, the same code but for
    storage/sql/dialect.py, runs the storage, webhook, identity, SQL and end-to-end
    suites; here it would add minutes to CI for nothing they do not cover."""
    if request.param == "memory":
        yield MemoryStorage()
        return
    if request.param == "sqlite":
        sql_backend = sql_storage(request.param, request)
        yield sql_backend
        sql_backend.close()
        return
    from storage.redis import RedisStorage

    url = request.getfixturevalue("redis_url")
    redis_backend = RedisStorage.from_url(url)
    yield redis_backend
    redis_backend.close()


@pytest.fixture
def settings(signing_key_file: str) -> Settings:
    return Settings(issuer_url=ISSUER, signing_key_file=signing_key_file)


@pytest.fixture
def app(backend: Storage, settings: Settings) -> Flask:
    app = create_app(settings, storage=backend)
    app.testing = True
    return app


@dataclass
class Tokens:
    """Makes API keys and real access tokens, one key per (org, role)."""

    app: Flask
    _cache: dict[tuple[str, str], str] = field(default_factory=dict)
    user_ids: dict[tuple[str, str], str] = field(default_factory=dict)

    def __call__(self, role: str = SERVICE_ADMIN, org: str = "acme") -> str:
        if (org, role) not in self._cache:
            identity = self.app.extensions["identity"]
            key, secret = identity.create_key(org, role)
            self.user_ids[(org, role)] = key.user_id
            self._cache[(org, role)] = identity.issue_token(org, key.client_id, secret)[
                "access_token"
            ]
        return self._cache[(org, role)]

    def headers(self, role: str = SERVICE_ADMIN, org: str = "acme") -> dict[str, str]:
        return {"Authorization": f"Bearer {self(role, org)}"}


@pytest.fixture
def tokens(app: Flask) -> Tokens:
    return Tokens(app)


class Api:
    """A test client that sends a bearer token of the given role (admin by default)."""

    def __init__(self, client: FlaskClient, tokens: Tokens) -> None:
        self.client = client
        self.tokens = tokens

    def request(
        self,
        method: str,
        path: str,
        *,
        role: str | None = SERVICE_ADMIN,
        org: str = "acme",
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Any:
        all_headers = dict(self.tokens.headers(role, org)) if role else {}
        all_headers.update(headers or {})
        return self.client.open(path, method=method, headers=all_headers, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> Any:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)

    # -- shortcuts for setting up state through the API itself

    def create_prompt(self, name: str = "greeting", prompt_type: str = "text", **kw: Any) -> Any:
        r = self.post("/api/v1/prompts", json={"name": name, "prompt_type": prompt_type}, **kw)
        assert r.status_code == 201, r.json
        return r.json

    def create_version(
        self, name: str = "greeting", content: str = "Hi {{name}}", **kw: Any
    ) -> Any:
        body = {"content": content, **kw.pop("body", {})}
        r = self.post(f"/api/v1/prompts/{name}/versions", json=body, **kw)
        assert r.status_code == 201, r.json
        return r.json

    def promote(self, name: str, version: str | int, **kw: Any) -> Any:
        r = self.post(f"/api/v1/prompts/{name}/versions/{version}/promote", **kw)
        assert r.status_code == 200, r.json
        return r.json


@pytest.fixture
def api(app: Flask, tokens: Tokens) -> Api:
    return Api(app.test_client(), tokens)


__all__ = ["SERVICE_ADMIN", "SERVICE_READ", "SERVICE_WRITE", "Api", "Tokens"]
