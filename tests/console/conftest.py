"""An app with two orgs, a person per role in each, and a signed-in console client."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from promptsvc.app import create_app
from promptsvc.config import Settings
from storage import Storage
from storage.memory import MemoryStorage
from tests.client.sdk_support import shared_signing_key
from tests.console.console_support import ORG, OTHER_ORG, PASSWORD, PEOPLE, sign_in

# Generous limits: the tests sign in many times from one address.
LIMITS = {
    "PROMPTSVC_LOGIN_RATE_LIMIT": "off",
    "PROMPTSVC_LOGIN_RATE_LIMIT_PER_IP": "off",
    "PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP": "off",
}


@pytest.fixture
def storage() -> Storage:
    return MemoryStorage()


@pytest.fixture
def app(storage: Storage) -> Flask:
    # The shared key: generating an RSA key for each test's app is the slow part.
    storage.ensure_signing_key(shared_signing_key())
    app = create_app(Settings.from_env(LIMITS, issuer_url="http://localhost"), storage=storage)
    identity = app.extensions["identity"]
    for org in (ORG, OTHER_ORG):
        for username, role in PEOPLE.items():
            identity.create_user(org, username, role, PASSWORD)
    return app


@pytest.fixture
def console(app: Flask) -> Callable[..., FlaskClient]:
    """``console(username, org=ORG)``: a test client signed in as that person."""

    def signed_in(username: str, org: str = ORG) -> FlaskClient:
        client = app.test_client()
        sign_in(client, username, org)
        return client

    return signed_in


@pytest.fixture
def admin(console: Callable[..., FlaskClient]) -> Iterator[FlaskClient]:
    yield console("admin")
