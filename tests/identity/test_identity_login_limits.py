"""Sign-in attempts are limited per username and address (failures only) and per client
address (every attempt), with counters in the app's storage: memory, real Redis,
SQLite, PostgreSQL. Failures limit the failing address, never the account: the right password from
elsewhere still works. Typed device user codes are limited per address (RFC 8628 5.1)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

import identity
from identity import ConsoleUris, RateLimits
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

MakeApp = Callable[[RateLimits], Flask]


def limited_app(store: Storage, clock: FakeClock, limits: RateLimits) -> Flask:
    seed_signing_key(store)
    app = Flask("limits")
    ident = identity.init_app(
        app,
        store,
        issuer_url=ISSUER,
        clock=clock,
        console=ConsoleUris(),
        login_rate_limits=limits,
        rate_limits=RateLimits("3/minute", None),
    )
    ident.create_user("acme", "ada", "Service Write", PASSWORD)
    return app


@pytest.fixture
def make_app(backend: str, make_storage: StorageFactory, clock: FakeClock) -> MakeApp:
    def make(limits: RateLimits) -> Flask:
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
    app = make_app(RateLimits("3/minute", None))
    client = app.test_client()
    for username in ("ada", "nobody"):  # a username that does not exist is limited alike
        for _ in range(3):
            assert attempt(client, username, "wrong password!!").status_code == 200
        assert_limited(attempt(client, username, PASSWORD))
    # Another username from the same address is not affected.
    other = attempt(client, "someone-else", "wrong password!!")
    assert other.status_code == 200


def test_failures_limit_the_failing_address_not_the_account(make_app: MakeApp) -> None:
    """An attacker who knows the username cannot lock its owner out."""
    app = make_app(RateLimits("3/minute", None))
    attacker = app.test_client()
    for _ in range(5):
        attempt(attacker, "ada", "wrong password!!", address="203.0.113.9")
    assert_limited(attempt(attacker, "ada", PASSWORD, address="203.0.113.9"))
    owner = attempt(app.test_client(), "ada", PASSWORD, address="198.51.100.7")
    assert owner.status_code == 302
    # ... and the owner's own mistakes count on the owner's address only.
    assert (
        attempt(app.test_client(), "ada", "typo password!!", address="198.51.100.7").status_code
        == 200
    )


def test_successes_do_not_count(make_app: MakeApp) -> None:
    app = make_app(RateLimits("2/minute", None))
    for _ in range(4):
        assert attempt(app.test_client(), "ada", PASSWORD).status_code == 302


def test_attempts_per_address(make_app: MakeApp) -> None:
    app = make_app(RateLimits(None, "4/minute"))
    client = app.test_client()
    for n in range(4):
        assert attempt(client, f"user{n}", "wrong password!!").status_code == 200
    assert_limited(attempt(client, "ada", PASSWORD))
    elsewhere = attempt(app.test_client(), "ada", PASSWORD, address="10.0.0.2")
    assert elsewhere.status_code == 302


def test_the_device_page_is_limited_too(make_app: MakeApp) -> None:
    app = make_app(RateLimits("2/minute", None))
    client = app.test_client()
    for _ in range(2):
        page = client.get(DEVICE_PAGE)
        action, fields = form_of(page)
        client.post(action, data={**fields, "username": "ada", "password": "wrong one!!!!!"})
    page = client.get(DEVICE_PAGE)
    action, fields = form_of(page)
    assert_limited(client.post(action, data={**fields, "username": "ada", "password": PASSWORD}))


def signed_in_device_page(client: FlaskClient, address: str) -> None:
    """Sign ``client`` in on the device page (from ``address``)."""
    environ = {"REMOTE_ADDR": address}
    action, fields = form_of(client.get(DEVICE_PAGE, environ_base=environ))
    answer = client.post(
        action, data={**fields, "username": "ada", "password": PASSWORD}, environ_base=environ
    )
    assert answer.status_code == 303


def guess(client: FlaskClient, code: str, address: str, method: str = "GET") -> TestResponse:
    environ = {"REMOTE_ADDR": address}
    if method == "GET":
        return client.get(DEVICE_PAGE, query_string={"user_code": code}, environ_base=environ)
    action, fields = form_of(client.get(DEVICE_PAGE, environ_base=environ))
    return client.post(action, data={**fields, "user_code": code}, environ_base=environ)


def test_device_user_code_guesses_are_limited(make_app: MakeApp) -> None:
    """RFC 8628 5.1: a signed-in person guessing user codes is stopped after a few."""
    app = make_app(RateLimits("4/minute", None))
    guesser = app.test_client()
    signed_in_device_page(guesser, "203.0.113.9")
    answers = [
        guess(guesser, f"BCDF-GH{n:02d}", "203.0.113.9", "GET" if n % 2 else "POST")
        for n in range(4)
    ]
    assert [a.status_code for a in answers] == [400] * 4
    limited = guess(guesser, "BCDF-GHJK", "203.0.113.9")
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) >= 1
    assert "Too many codes tried" in limited.get_data(as_text=True)
    assert guess(guesser, "BCDF-GHJK", "203.0.113.9", "POST").status_code == 429
    # The page itself, and another address, are not limited.
    assert guesser.get(DEVICE_PAGE, environ_base={"REMOTE_ADDR": "203.0.113.9"}).status_code == 200
    other = app.test_client()
    signed_in_device_page(other, "198.51.100.7")
    assert guess(other, "BCDF-GHJK", "198.51.100.7").status_code == 400


def test_pages_without_a_password_are_not_counted(make_app: MakeApp) -> None:
    app = make_app(RateLimits("1/minute", "1/minute"))
    client = app.test_client()
    for _ in range(5):
        assert client.get(AUTH, query_string=auth_params(Pkce.new())).status_code == 200


def test_public_clients_share_no_failure_counter(make_app: MakeApp) -> None:
    """The token endpoint's per-client limit counts failed client authentications; a
    public client has no secret to guess, and one counter for every person using
    promptsvc-cli would let anyone lock them all out."""
    app = make_app(RateLimits(None, None))
    client = app.test_client()
    for _ in range(6):
        refused = client.post(
            TOKEN,
            data={"grant_type": "authorization_code", "code": "x", "client_id": CLI,
                  "client_secret": "guessing-a-secret"},
        )  # fmt: skip
        assert refused.status_code == 401
