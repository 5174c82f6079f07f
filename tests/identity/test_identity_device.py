"""The device authorization grant (RFC 8628) end to end: start, approve on the
verification page as a signed-in person, poll. On memory, real Redis, SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from identity import Lifetimes
from identity.login import SESSION_COOKIE
from identity.secrets import lookup_digest as digest
from tests.clock import FakeClock
from tests.identity.identity_support import ISSUER, assert_oauth_error, claims_of
from tests.identity.people_support import (
    CLI,
    CONSOLE,
    DEVICE_AUTH,
    DEVICE_PAGE,
    PASSWORD,
    TOKEN,
    People,
    form_of,
)

GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def start(people: People, **data: str) -> dict[str, Any]:
    response = people.client.post(DEVICE_AUTH, data={"client_id": CLI, **data})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = response.json
    return body


def poll(people: People, device_code: str, client_id: str = CLI) -> TestResponse:
    return people.client.post(
        TOKEN, data={"grant_type": GRANT, "device_code": device_code, "client_id": client_id}
    )


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def browser_signed_in(people: People, username: str = "ada") -> FlaskClient:
    browser = people.app.test_client()
    page = browser.get(DEVICE_PAGE)
    action, fields = form_of(page)
    answer = browser.post(action, data={**fields, "username": username, "password": PASSWORD})
    assert answer.status_code == 303
    return browser


def decide(browser: FlaskClient, url: str, action: str) -> TestResponse:
    confirm = browser.get(path_of(url))
    assert confirm.status_code == 200, confirm.get_data(as_text=True)
    form_action, fields = form_of(confirm)
    return browser.post(form_action, data={**fields, "action": action})


def test_device_flow_end_to_end(people: People, clock: FakeClock) -> None:
    started = start(people, scope="openid")
    assert set(started) == {
        "device_code", "user_code", "verification_uri", "verification_uri_complete",
        "expires_in", "interval",
    }  # fmt: skip
    assert started["verification_uri"] == f"{ISSUER}/realms/acme/device"
    assert started["verification_uri_complete"] == (
        f"{ISSUER}/realms/acme/device?user_code={started['user_code']}"
    )
    assert started["expires_in"] == Lifetimes().device
    assert started["interval"] == Lifetimes().device_interval
    assert_oauth_error(poll(people, started["device_code"]), 400, "authorization_pending")
    clock.advance(1)
    assert_oauth_error(poll(people, started["device_code"]), 400, "slow_down")

    # The person opens the page: sign in first, then the code from the link is shown.
    browser = people.app.test_client()
    page = browser.get(path_of(started["verification_uri_complete"]))
    assert 'name="password"' in page.get_data(as_text=True)
    action, fields = form_of(page)
    signed_in = browser.post(action, data={**fields, "username": "ada", "password": PASSWORD})
    assert signed_in.status_code == 303
    done = decide(browser, started["verification_uri_complete"], "approve")
    assert done.status_code == 200
    assert "connected" in done.get_data(as_text=True)

    clock.advance(6)
    tokens = poll(people, started["device_code"])
    assert tokens.status_code == 200, tokens.get_data(as_text=True)
    body = tokens.json
    assert {"access_token", "refresh_token", "id_token"} <= set(body)
    claims = claims_of(body["access_token"])
    assert (claims["azp"], claims["preferred_username"]) == (CLI, "ada")
    assert body["scope"] == "openid prompts:read prompts:write"
    # The device has a session of its own, not the approving browser's.
    cookie = browser.get_cookie(SESSION_COOKIE, path="/realms/acme/")
    assert cookie is not None
    assert claims["sid"] != digest(cookie.value)
    assert claims_of(body["id_token"])["sid"] == claims["sid"]
    refreshed = people.client.post(
        TOKEN, data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"],
                     "client_id": CLI},
    )  # fmt: skip
    assert refreshed.status_code == 200
    # The device code works once.
    clock.advance(6)
    again = poll(people, started["device_code"])
    assert again.status_code == 400
    assert again.json["error"] in ("invalid_request", "invalid_grant")


def test_denied(people: People, clock: FakeClock) -> None:
    started = start(people)
    browser = browser_signed_in(people)
    answer = decide(browser, started["verification_uri_complete"], "deny")
    assert "not connected" in answer.get_data(as_text=True)
    clock.advance(6)
    assert_oauth_error(poll(people, started["device_code"]), 400, "access_denied")


def test_expired(people: People, clock: FakeClock) -> None:
    started = start(people)
    clock.advance(Lifetimes().device + 1)
    assert_oauth_error(poll(people, started["device_code"]), 400, "expired_token")
    browser = browser_signed_in(people)
    page = browser.get(path_of(started["verification_uri_complete"]))
    assert page.status_code == 400
    assert "expired" in page.get_data(as_text=True)


def test_typing_the_code(people: People, clock: FakeClock) -> None:
    started = start(people)
    browser = browser_signed_in(people)
    page = browser.get(DEVICE_PAGE)
    action, fields = form_of(page)
    typed = started["user_code"].replace("-", " ").lower()
    confirm = browser.post(action, data={**fields, "user_code": typed, "action": "lookup"})
    assert confirm.status_code == 200
    assert started["user_code"] in confirm.get_data(as_text=True)
    form_action, confirm_fields = form_of(confirm)
    browser.post(form_action, data={**confirm_fields, "action": "approve"})
    clock.advance(6)
    assert poll(people, started["device_code"]).status_code == 200


@pytest.mark.parametrize("typed", ["", "ZZZZ-ZZZZ", "not a code", "x" * 500, "<script>"])
def test_unknown_codes_on_the_page(people: People, typed: str) -> None:
    browser = browser_signed_in(people)
    page = browser.get(DEVICE_PAGE)
    action, fields = form_of(page)
    answer = browser.post(action, data={**fields, "user_code": typed, "action": "approve"})
    assert answer.status_code in (200, 400)
    html = answer.get_data(as_text=True)
    assert "<script>" not in html
    if typed:
        assert answer.status_code == 400 and "not valid" in html


def test_deciding_twice(people: People, clock: FakeClock) -> None:
    started = start(people)
    browser = browser_signed_in(people)
    decide(browser, started["verification_uri_complete"], "approve")
    second = browser.get(path_of(started["verification_uri_complete"]))
    assert second.status_code == 400


def test_approving_needs_the_csrf_token(people: People) -> None:
    started = start(people)
    browser = browser_signed_in(people)
    confirm = browser.get(path_of(started["verification_uri_complete"]))
    action, fields = form_of(confirm)
    answer = browser.post(action, data={**fields, "csrf_token": "forged", "action": "approve"})
    assert answer.status_code == 400
    assert_oauth_error(poll(people, started["device_code"]), 400, "authorization_pending")


def test_a_reader_cannot_approve_a_writers_request(people: People) -> None:
    started = start(people, scope="prompts:write prompts:read")
    browser = browser_signed_in(people, "bob")
    answer = decide(browser, started["verification_uri_complete"], "approve")
    assert answer.status_code == 403
    assert_oauth_error(poll(people, started["device_code"]), 400, "authorization_pending")


def test_a_disabled_approver(people: People, clock: FakeClock) -> None:
    started = start(people)
    browser = browser_signed_in(people)
    decide(browser, started["verification_uri_complete"], "approve")
    people.identity.update_user("acme", "ada", disabled=True)
    clock.advance(6)
    assert_oauth_error(poll(people, started["device_code"]), 400, "access_denied")


def test_the_device_page_signs_in_like_the_login_page(people: People) -> None:
    browser = people.app.test_client()
    page = browser.get(DEVICE_PAGE)
    action, fields = form_of(page)
    answer = browser.post(action, data={**fields, "username": "ada", "password": "wrong one!!!!"})
    assert answer.status_code == 200
    assert "Invalid username or password." in answer.get_data(as_text=True)


@pytest.mark.parametrize(
    ("data", "status", "error"),
    [
        ({"client_id": CONSOLE}, 400, "unauthorized_client"),
        ({"client_id": "acme-admin"}, 401, "invalid_client"),
        ({"client_id": "nobody"}, 401, "invalid_client"),
        ({"scope": "openid"}, 401, "invalid_client"),
        ({}, 400, "invalid_request"),  # no body, so no form either
        ({"client_id": CLI, "scope": "prompts:admin"}, 400, "invalid_scope"),
    ],
)
def test_device_start_refusals(people: People, data: dict, status: int, error: str) -> None:
    assert_oauth_error(people.client.post(DEVICE_AUTH, data=data), status, error)


def test_device_start_needs_a_form(people: People) -> None:
    response = people.client.post(DEVICE_AUTH, json={"client_id": CLI})
    assert_oauth_error(response, 400, "invalid_request")


@pytest.mark.parametrize("device_code", ["", "nope", "x" * 5000])
def test_bad_device_codes(people: People, device_code: str) -> None:
    response = poll(people, device_code)
    assert response.status_code == 400
    assert response.json["error"] in ("invalid_request", "invalid_grant")


def test_another_client_cannot_poll(people: People) -> None:
    started = start(people)
    response = poll(people, started["device_code"], client_id=CONSOLE)
    assert response.status_code == 400
    assert response.json["error"] == "unauthorized_client"


def test_the_device_page_of_an_unknown_realm(people: People) -> None:
    assert people.client.get("/realms/nope/device").status_code == 404
