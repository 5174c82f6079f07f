"""Sign-in attempts are limited per username (failures only) and per client address
(every attempt), with counters in the app's storage: memory, fakeredis, real Redis."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

import identity
from identity import ConsoleUris, LoginRateLimits, TokenRateLimits
from storage import Storage
from tests.clock import FakeClock
from tests.identity.identity_support import ISSUER, StorageFactory, seed_signing_key
from tests.identity.people_support import (
    AUTH,
    CLI,
    DEVICE_PAGE,
    PASSWORD,
    TOKEN,
    Pkce,
    auth_params,
    form_of,
)

MakeApp = Callable[[LoginRateLimits], Flask]


def limited_app(store: Storage, clock: FakeClock, limits: LoginRateLimits) -> Flask:
    seed_signing_key(store)
    app = Flask("limits")
    ident = identity.init_app(
        app,
        store,
        issuer_url=ISSUER,
        clock=clock,
        console=ConsoleUris(),
        login_rate_limits=limits,
        rate_limits=TokenRateLimits("3/minute", None),
    )
    ident.create_user("acme", "ada", "Service Write", PASSWORD)
    return app


@pytest.fixture
def make_app(backend: str, make_storage: StorageFactory, clock: FakeClock) -> MakeApp:
    def make(limits: LoginRateLimits) -> Flask:
        return limited_app(make_storage(backend), clock, limits)

    return make


def attempt(
    client: FlaskClient, username: str, password: str, address: str = "10.0.0.1"
) -> TestResponse:
    environ = {"REMOTE_ADDR": address}
    page = client.get(AUTH, query_string=auth_params(Pkce.new()), environ_base=environ)
    assert page.status_code == 200
    action, fields = form_of(page)
    return client.post(
        action,
        data={**fields, "username": username, "password": password},
        environ_base=environ,
    )


def assert_limited(answer: TestResponse) -> None:
    assert answer.status_code == 429
    assert int(answer.headers["Retry-After"]) >= 1
    html = answer.get_data(as_text=True)
    assert "Too many sign-in attempts" in html
    assert "username" in html  # the login form again, not an error without a way back


def test_failures_per_username(make_app: MakeApp) -> None:
    app = make_app(LoginRateLimits("3/minute", None))
    client = app.test_client()
    for username in ("ada", "nobody"):  # a username that does not exist is limited alike
        for _ in range(3):
            assert attempt(client, username, "wrong password!!").status_code == 200
        assert_limited(attempt(client, username, PASSWORD))
    # Another username from the same address is not affected.
    other = attempt(client, "someone-else", "wrong password!!")
    assert other.status_code == 200


def test_successes_do_not_count(make_app: MakeApp) -> None:
    app = make_app(LoginRateLimits("2/minute", None))
    for _ in range(4):
        assert attempt(app.test_client(), "ada", PASSWORD).status_code == 302


def test_attempts_per_address(make_app: MakeApp) -> None:
    app = make_app(LoginRateLimits(None, "4/minute"))
    client = app.test_client()
    for n in range(4):
        assert attempt(client, f"user{n}", "wrong password!!").status_code == 200
    assert_limited(attempt(client, "ada", PASSWORD))
    elsewhere = attempt(app.test_client(), "ada", PASSWORD, address="10.0.0.2")
    assert elsewhere.status_code == 302


def test_the_device_page_is_limited_too(make_app: MakeApp) -> None:
    app = make_app(LoginRateLimits("2/minute", None))
    client = app.test_client()
    for _ in range(2):
        page = client.get(DEVICE_PAGE)
        action, fields = form_of(page)
        client.post(action, data={**fields, "username": "ada", "password": "wrong one!!!!!"})
    page = client.get(DEVICE_PAGE)
    action, fields = form_of(page)
    assert_limited(client.post(action, data={**fields, "username": "ada", "password": PASSWORD}))


def test_pages_without_a_password_are_not_counted(make_app: MakeApp) -> None:
    app = make_app(LoginRateLimits("1/minute", "1/minute"))
    client = app.test_client()
    for _ in range(5):
        assert client.get(AUTH, query_string=auth_params(Pkce.new())).status_code == 200


def test_public_clients_share_no_failure_counter(make_app: MakeApp) -> None:
    """The token endpoint's per-client limit counts failed client authentications; a
    public client has no secret to guess, and one counter for every person using
    promptsvc-cli would let anyone lock them all out."""
    app = make_app(LoginRateLimits(None, None))
    client = app.test_client()
    for _ in range(6):
        refused = client.post(
            TOKEN,
            data={"grant_type": "authorization_code", "code": "x", "client_id": CLI,
                  "client_secret": "guessing-a-secret"},
        )  # fmt: skip
        assert refused.status_code == 401
