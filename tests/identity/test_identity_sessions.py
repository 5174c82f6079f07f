"""After sign-in: refresh token rotation and reuse, revoke, userinfo, introspection of
people's tokens, logout. Each test runs on memory, real Redis, SQLite and PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

import pytest

from identity import Lifetimes
from identity.login import SESSION_COOKIE
from identity.roles import SERVICE_READ
from tests.clock import FakeClock
from tests.identity.identity_support import assert_oauth_error, claims_of
from tests.identity.people_support import (
    AUTH,
    CLI,
    CONSOLE,
    CONSOLE_CALLBACK,
    CONSOLE_HOME,
    LOGOUT,
    REVOKE,
    USERINFO,
    People,
    Pkce,
    auth_params,
    code_for,
    exchange,
    form_of,
    redirect_params,
    refresh,
    sign_in,
    tokens_for,
)

INTROSPECT = "/realms/acme/protocol/openid-connect/token/introspect"
ADMIN = ("acme-admin", "s" * 20)


def introspect(people: People, token: str, **extra: str) -> dict[str, Any]:
    response = people.client.post(INTROSPECT, data={"token": token, **extra}, auth=ADMIN)
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.json
    return body


def userinfo(people: People, token: str) -> Any:
    return people.client.get(USERINFO, headers={"Authorization": f"Bearer {token}"})


# --------------------------------------------------------------------------- refresh


def test_refresh_rotates(people: People, clock: FakeClock) -> None:
    first = tokens_for(people.client)
    clock.advance(60)
    second = refresh(people.client, first["refresh_token"])
    assert second.status_code == 200, second.get_data(as_text=True)
    body = second.json
    assert body["refresh_token"] != first["refresh_token"]
    assert body["access_token"] != first["access_token"]
    assert body["scope"] == first["scope"]
    assert body["refresh_expires_in"] == Lifetimes().refresh
    assert "id_token" in body  # scope openid
    claims = claims_of(body["access_token"])
    assert claims["iat"] == int(clock())
    assert claims["sid"] == claims_of(first["access_token"])["sid"]
    third = refresh(people.client, body["refresh_token"])
    assert third.status_code == 200


def test_a_reused_refresh_token_revokes_the_whole_chain(people: People) -> None:
    first = tokens_for(people.client)
    second = refresh(people.client, first["refresh_token"]).json
    reused = refresh(people.client, first["refresh_token"])
    assert_oauth_error(reused, 400, "invalid_grant")
    assert "revoked" in reused.json["error_description"]
    # The newest token of the chain went with it.
    assert_oauth_error(refresh(people.client, second["refresh_token"]), 400, "invalid_grant")


def test_racing_refreshes_leave_one_winner_at_most(people: People) -> None:
    """Two uses of one token race: one may win, the loser is a reuse."""
    from concurrent.futures import ThreadPoolExecutor

    first = tokens_for(people.client)

    def use(_: int) -> int:
        return refresh(people.app.test_client(), first["refresh_token"]).status_code

    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(use, range(4)))
    assert statuses.count(200) <= 1
    assert statuses.count(400) >= 3


def test_refresh_narrows_scope_on_request(people: People) -> None:
    first = tokens_for(people.client)
    narrowed = refresh(people.client, first["refresh_token"], scope="prompts:read").json
    assert narrowed["scope"] == "prompts:read"
    assert people.identity.verify(f"Bearer {narrowed['access_token']}").role == SERVICE_READ
    # ...and the next refresh may widen back to what the sign-in granted.
    wide = refresh(people.client, narrowed["refresh_token"]).json
    assert wide["scope"] == first["scope"]
    beyond = refresh(people.client, wide["refresh_token"], scope="keys:manage")
    assert_oauth_error(beyond, 400, "invalid_scope")


def test_refresh_follows_a_role_change(people: People) -> None:
    first = tokens_for(people.client)
    people.identity.update_user("acme", "ada", role=SERVICE_READ)
    body = refresh(people.client, first["refresh_token"]).json
    assert body["scope"] == "openid prompts:read"
    assert claims_of(body["access_token"])["roles"] == [SERVICE_READ]


def test_a_disabled_user_cannot_refresh(people: People) -> None:
    first = tokens_for(people.client)
    people.identity.update_user("acme", "ada", disabled=True)
    assert_oauth_error(refresh(people.client, first["refresh_token"]), 400, "invalid_grant")
    # ...and enabling again does not revive tokens refused meanwhile? It does: the
    # family was not revoked, only refused while disabled.
    people.identity.update_user("acme", "ada", disabled=False)
    assert refresh(people.client, first["refresh_token"]).status_code == 200


@pytest.mark.parametrize("token", ["", "nope", "x" * 5000, "a.b.c"])
def test_bad_refresh_tokens(people: People, token: str) -> None:
    response = refresh(people.client, token)
    assert response.status_code == 400
    assert response.json["error"] in ("invalid_grant", "invalid_request")


def test_a_refresh_token_of_another_client(people: People) -> None:
    first = tokens_for(people.client)
    response = refresh(people.client, first["refresh_token"], client_id=CONSOLE)
    assert_oauth_error(response, 400, "invalid_grant")


def test_a_refresh_token_of_another_realm(people: People) -> None:
    first = tokens_for(people.client)
    people.identity.create_key("globex", SERVICE_READ)
    response = people.client.post(
        "/realms/globex/protocol/openid-connect/token",
        data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"],
              "client_id": CLI},
    )  # fmt: skip
    assert_oauth_error(response, 400, "invalid_grant")


@pytest.mark.parametrize("lifetimes", [Lifetimes(refresh=1)])
def test_a_refresh_token_expires(people: People, clock: FakeClock) -> None:
    first = tokens_for(people.client)
    assert first["refresh_expires_in"] == 1
    clock.advance(2)
    time.sleep(1.2)  # Redis drops it by TTL in real time
    assert_oauth_error(refresh(people.client, first["refresh_token"]), 400, "invalid_grant")


@pytest.mark.parametrize("lifetimes", [Lifetimes(session=120, refresh=1800)])
def test_refresh_tokens_never_outlive_the_session(people: People, clock: FakeClock) -> None:
    first = tokens_for(people.client)
    assert first["refresh_expires_in"] == 120
    clock.advance(100)
    assert refresh(people.client, first["refresh_token"]).json["refresh_expires_in"] == 20


# --------------------------------------------------------------------------- revoke


def test_revoke_a_refresh_token(people: People) -> None:
    first = tokens_for(people.client)
    second = refresh(people.client, first["refresh_token"]).json
    response = people.client.post(REVOKE, data={"token": second["refresh_token"], "client_id": CLI})
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    assert_oauth_error(refresh(people.client, second["refresh_token"]), 400, "invalid_grant")


@pytest.mark.parametrize("token", ["unknown", "", "x" * 3000])
def test_revoking_an_unknown_token_is_fine(people: People, token: str) -> None:
    response = people.client.post(REVOKE, data={"token": token, "client_id": CLI})
    assert response.status_code == 200


def test_revoking_an_access_token_changes_nothing(people: People) -> None:
    first = tokens_for(people.client)
    response = people.client.post(REVOKE, data={"token": first["access_token"], "client_id": CLI})
    assert response.status_code == 200
    assert refresh(people.client, first["refresh_token"]).status_code == 200


def test_revoke_bad_requests(people: People) -> None:
    first = tokens_for(people.client)
    assert_oauth_error(people.client.post(REVOKE, data={"client_id": CLI}), 400, "invalid_request")
    other_client = people.client.post(
        REVOKE, data={"token": first["refresh_token"], "client_id": CONSOLE}
    )
    assert other_client.status_code == 400
    assert refresh(people.client, first["refresh_token"]).status_code == 200  # untouched
    no_client = people.client.post(REVOKE, data={"token": first["refresh_token"]})
    assert_oauth_error(no_client, 401, "invalid_client")
    as_json = people.client.post(REVOKE, json={"token": "x", "client_id": CLI})
    assert_oauth_error(as_json, 400, "invalid_request")


# --------------------------------------------------------------------------- userinfo


def test_userinfo(people: People) -> None:
    first = tokens_for(people.client)
    response = userinfo(people, first["access_token"])
    assert response.status_code == 200
    ada = people.identity.storage.get_user("acme", "ada")
    assert ada is not None
    assert response.json == {
        "sub": ada.user_id,
        "preferred_username": "ada",
        "org": "acme",
        "roles": ["Service Write"],
    }
    bearer = {"Authorization": f"Bearer {first['access_token']}"}
    posted = people.client.post(USERINFO, headers=bearer)
    assert posted.json == response.json


def test_userinfo_of_a_key(people: People) -> None:
    token = people.client.post(
        "/realms/acme/protocol/openid-connect/token",
        data={"grant_type": "client_credentials", "scope": "openid"},
        auth=ADMIN,
    ).json["access_token"]
    body = userinfo(people, token).json
    assert body["preferred_username"] == "service-account-acme-admin"
    assert body["roles"] == ["Service Admin"]


def test_userinfo_refusals(people: People, clock: FakeClock) -> None:
    without_openid = tokens_for(people.client, scope="prompts:read")
    refused = userinfo(people, without_openid["access_token"])
    assert refused.status_code == 403
    assert refused.json["error"] == "insufficient_scope"
    for header in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic eDp5"}):
        response = people.client.get(USERINFO, headers=header)
        assert response.status_code == 401, header
        assert "WWW-Authenticate" in response.headers
    first = tokens_for(people.app.test_client())
    clock.advance(301)
    assert userinfo(people, first["access_token"]).status_code == 401


# --------------------------------------------------------------------------- introspection


def test_introspection_of_peoples_tokens(people: People) -> None:
    first = tokens_for(people.client)
    access = introspect(people, first["access_token"])
    assert access["active"] is True
    assert access["username"] == "ada"
    assert access["client_id"] == CLI
    refresh_info = introspect(people, first["refresh_token"], token_type_hint="refresh_token")
    assert refresh_info["active"] is True
    assert refresh_info["token_type"] == "Refresh"
    assert refresh_info["username"] == "ada"
    refresh(people.client, first["refresh_token"])
    assert introspect(people, first["refresh_token"]) == {"active": False}  # used


def test_introspection_after_logout_is_inactive(people: People) -> None:
    first = tokens_for(people.client)
    response = people.client.post(
        LOGOUT, data={"client_id": CLI, "refresh_token": first["refresh_token"]}
    )
    assert response.status_code == 204
    assert introspect(people, first["access_token"]) == {"active": False}
    assert introspect(people, first["refresh_token"]) == {"active": False}
    # The API itself keeps accepting the access token until it expires.
    assert people.identity.verify(f"Bearer {first['access_token']}").client_id == CLI
    assert userinfo(people, first["access_token"]).status_code == 401


def test_introspection_of_a_disabled_persons_token(people: People) -> None:
    first = tokens_for(people.client)
    people.identity.update_user("acme", "ada", disabled=True)
    assert introspect(people, first["access_token"]) == {"active": False}


# --------------------------------------------------------------------------- logout


def test_client_logout_with_a_refresh_token(people: People) -> None:
    """python-keycloak's logout(): POST client_id + refresh_token, 204."""
    first = tokens_for(people.client)
    response = people.client.post(
        LOGOUT, data={"client_id": CLI, "refresh_token": first["refresh_token"]}
    )
    assert response.status_code == 204
    assert_oauth_error(refresh(people.client, first["refresh_token"]), 400, "invalid_grant")
    # The browser session is gone too: the next authorization shows the form again.
    page = people.client.get(AUTH, query_string=auth_params(Pkce.new()))
    assert page.status_code == 200 and 'name="password"' in page.get_data(as_text=True)


def test_client_logout_refusals(people: People) -> None:
    first = tokens_for(people.client)
    for data, status, error in (
        ({"client_id": CLI, "refresh_token": "nope"}, 400, "invalid_grant"),
        ({"client_id": CONSOLE, "refresh_token": first["refresh_token"]}, 400, "invalid_grant"),
        ({"refresh_token": first["refresh_token"]}, 401, "invalid_client"),
        ({"client_id": "nobody", "refresh_token": first["refresh_token"]}, 401, "invalid_client"),
    ):
        assert_oauth_error(people.client.post(LOGOUT, data=data), status, error)
    assert refresh(people.client, first["refresh_token"]).status_code == 200


def _console_sign_in(people: People, browser: Any = None, username: str = "ada") -> dict[str, Any]:
    browser = browser or people.client
    pkce = Pkce.new()
    code = code_for(browser, pkce, username, client_id=CONSOLE, redirect_uri=CONSOLE_CALLBACK)
    response = exchange(browser, code, pkce, client_id=CONSOLE, redirect_uri=CONSOLE_CALLBACK)
    body: dict[str, Any] = response.json
    return body


def test_logout_with_someone_elses_id_token_asks_first(people: People) -> None:
    """Logout CSRF: a link carrying the attacker's own id_token must not sign the
    victim's browser out; it asks, and ends neither session until confirmed."""
    victim = _console_sign_in(people)
    attacker = _console_sign_in(people, people.app.test_client(), "bob")
    query = {"id_token_hint": attacker["id_token"], "post_logout_redirect_uri": CONSOLE_HOME}
    page = people.client.get(LOGOUT, query_string=query)
    assert page.status_code == 200
    assert "Location" not in page.headers
    assert "Sign out?" in page.get_data(as_text=True)
    assert refresh(people.client, victim["refresh_token"], client_id=CONSOLE).status_code == 200
    assert refresh(people.client, attacker["refresh_token"], client_id=CONSOLE).status_code == 200
    # Confirmed by the person (the form carries the CSRF token): now it signs out.
    action, fields = form_of(page)
    answer = people.client.post(action, data=fields)
    assert answer.status_code == 302
    assert answer.headers["Location"] == CONSOLE_HOME
    assert refresh(people.client, victim["refresh_token"], client_id=CONSOLE).status_code == 400


def test_logout_with_an_id_token_but_no_browser_session_asks_first(people: People) -> None:
    tokens = _console_sign_in(people)
    stranger = people.app.test_client()  # no realm session cookie
    page = stranger.get(LOGOUT, query_string={"id_token_hint": tokens["id_token"]})
    assert page.status_code == 200
    assert "Sign out?" in page.get_data(as_text=True)
    assert refresh(people.client, tokens["refresh_token"], client_id=CONSOLE).status_code == 200


def test_logout_with_an_id_token_redirects_to_a_registered_uri(people: People) -> None:
    tokens = _console_sign_in(people)
    answer = people.client.get(
        LOGOUT,
        query_string={
            "id_token_hint": tokens["id_token"],
            "post_logout_redirect_uri": CONSOLE_HOME,
            "state": "bye",
        },
    )
    assert answer.status_code == 302
    assert answer.headers["Location"] == f"{CONSOLE_HOME}?state=bye"
    assert f"{SESSION_COOKIE}=;" in answer.headers["Set-Cookie"]
    assert_oauth_error(refresh(people.client, tokens["refresh_token"], client_id=CONSOLE), 400,
                       "invalid_grant")  # fmt: skip


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", CONSOLE_HOME + "evil", "//evil.example", CONSOLE_CALLBACK],
)
def test_logout_never_redirects_to_an_unregistered_uri(people: People, target: str) -> None:
    tokens = _console_sign_in(people)
    answer = people.client.get(
        LOGOUT,
        query_string={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": target},
    )
    assert answer.status_code == 200
    assert "Location" not in answer.headers
    assert "signed out" in answer.get_data(as_text=True)
    # The session ended all the same.
    assert refresh(people.client, tokens["refresh_token"], client_id=CONSOLE).status_code == 400


def test_logout_without_an_id_token_asks_first(people: People) -> None:
    tokens = _console_sign_in(people)
    query = {"client_id": CONSOLE, "post_logout_redirect_uri": CONSOLE_HOME, "state": "s"}
    page = people.client.get(LOGOUT, query_string=query)
    assert page.status_code == 200
    assert refresh(people.client, tokens["refresh_token"], client_id=CONSOLE).status_code == 200
    action, fields = form_of(page)
    forged = people.client.post(action, data={**fields, "csrf_token": "forged"})
    assert forged.status_code == 400
    answer = people.client.post(action, data=fields)
    assert answer.status_code == 302
    assert answer.headers["Location"] == f"{CONSOLE_HOME}?state=s"
    # That browser's session ended, and with it the console's refresh tokens.
    later = refresh(people.client, tokens["refresh_token"], client_id=CONSOLE)
    assert later.status_code == 400


def test_logout_with_another_realms_id_token(people: People) -> None:
    people.identity.create_user("globex", "eve", SERVICE_READ, "another long password")
    browser = people.app.test_client()
    pkce = Pkce.new()
    params = auth_params(pkce)
    page = browser.get("/realms/globex/protocol/openid-connect/auth", query_string=params)
    action, fields = form_of(page)
    answer = browser.post(action, data={**fields, "username": "eve",
                                        "password": "another long password"})  # fmt: skip
    code = redirect_params(answer)["code"]
    eve = browser.post(
        "/realms/globex/protocol/openid-connect/token",
        data={"grant_type": "authorization_code", "code": code, "client_id": CLI,
              "redirect_uri": params["redirect_uri"], "code_verifier": pkce.verifier},
    ).json  # fmt: skip
    refused = people.client.get(LOGOUT, query_string={"id_token_hint": eve["id_token"]})
    assert refused.status_code == 400


@pytest.mark.parametrize("hint", ["nope", "a.b.c", "x" * 5000])
def test_logout_with_a_bad_id_token_hint(people: People, hint: str) -> None:
    answer = people.client.get(
        LOGOUT, query_string={"id_token_hint": hint, "post_logout_redirect_uri": CONSOLE_HOME}
    )
    assert answer.status_code == 400
    assert "Location" not in answer.headers


def test_signing_out_in_the_browser_keeps_other_sign_ins(people: People) -> None:
    """Two browsers, two sessions: one signing out leaves the other signed in."""
    mine = tokens_for(people.client)
    other = tokens_for(people.app.test_client())
    page = people.client.get(LOGOUT)
    action, fields = form_of(page)
    people.client.post(action, data=fields)
    assert refresh(people.client, mine["refresh_token"]).status_code == 400
    assert refresh(people.client, other["refresh_token"]).status_code == 200


def test_sign_in_after_logout_asks_again(people: People) -> None:
    sign_in(people.client, auth_params(Pkce.new()))
    page = people.client.get(LOGOUT)
    action, fields = form_of(page)
    assert people.client.post(action, data=fields).status_code == 200
    again = people.client.get(AUTH, query_string=auth_params(Pkce.new()))
    assert 'name="password"' in again.get_data(as_text=True)
