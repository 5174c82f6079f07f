"""Signing in and out of the console through the org's realm (authorization code with
PKCE, Authlib's client, the realm answered in-process), and the session cookie."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from promptsvc.app import create_app
from promptsvc.config import Settings
from promptsvc.console.signin import SIGNED_IN
from storage import PromptNotFound, Storage
from tests.console.console_support import (
    ORG,
    PASSWORD,
    csrf_token,
    finish_realm_login,
    sign_in,
)


def _start(client: FlaskClient, org: str = ORG, **extra: str) -> object:
    page = client.get("/console/")
    return client.post(
        "/console/login", data={"org": org, "csrf_token": csrf_token(page.text), **extra}
    )


def test_console_sends_people_to_their_realm_with_pkce(app: Flask) -> None:
    client = app.test_client()
    answer = _start(client)
    assert answer.status_code == 302
    target = urlsplit(answer.headers["Location"])
    query = parse_qs(target.query)
    assert target.path == f"/realms/{ORG}/protocol/openid-connect/auth"
    assert query["client_id"] == ["promptsvc-console"]
    assert query["redirect_uri"] == ["http://localhost/console/callback"]
    assert query["response_type"] == ["code"]
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert "openid" in query["scope"][0].split()
    assert query["state"][0] and query["nonce"][0]


def test_signed_in_person_sees_their_org_name_and_role(console: Callable[..., FlaskClient]) -> None:
    page = console("writer").get("/console/prompts")
    assert page.status_code == 200
    assert "writer" in page.text and "Service Write" in page.text and ORG in page.text


def test_pages_need_a_signed_in_person_and_come_back_after_sign_in(app: Flask) -> None:
    client = app.test_client()
    answer = client.get("/console/prompts?q=gr")
    assert answer.status_code == 302
    assert answer.headers["Location"].startswith("/console/?next=")
    sign_in(client, "reader", next_url="/console/prompts?q=gr")
    # The callback went to the page first asked for.
    assert client.get("/console/prompts?q=gr").status_code == 200


def test_next_never_leaves_the_console(app: Flask) -> None:
    for bad in (
        "https://evil.example/",
        "//evil.example/console/",
        "/api/v1/prompts",
        "/console/\\evil",
    ):
        client = app.test_client()
        page = client.get("/console/")
        to_realm = client.post(
            "/console/login", data={"org": ORG, "csrf_token": csrf_token(page.text), "next": bad}
        )
        callback = finish_realm_login(client, to_realm, "reader")
        assert callback.headers["Location"] == "/console/prompts", bad


def test_unknown_or_malformed_org_is_said_on_the_form(app: Flask) -> None:
    client = app.test_client()
    for org, status in (("nobody", 404), ("Not An Org!", 404), ("", 400)):
        page = _start(client, org)
        assert page.status_code == status
        text = page.text
        assert "Enter your organization" in text if not org else "There is no organization" in text


def test_callback_without_a_sign_in_started_here_is_refused(app: Flask) -> None:
    client = app.test_client()
    answer = client.get("/console/callback?code=abc&state=def")
    assert answer.status_code == 400
    assert "sign in again" in answer.text
    assert client.get("/console/prompts").status_code == 302  # still signed out


def test_callback_with_a_forged_state_is_refused(app: Flask) -> None:
    client = app.test_client()
    to_realm = _start(client)
    state = parse_qs(urlsplit(to_realm.headers["Location"]).query)["state"][0]
    answer = client.get(f"/console/callback?code=made-up&state={state}x")
    assert answer.status_code == 400 and "Sign-in failed" in answer.text
    assert client.get("/console/prompts").status_code == 302


def test_cancelled_sign_in_says_so(app: Flask) -> None:
    client = app.test_client()
    to_realm = _start(client)
    state = parse_qs(urlsplit(to_realm.headers["Location"]).query)["state"][0]
    answer = client.get(f"/console/callback?error=access_denied&state={state}")
    assert answer.status_code == 400 and "Sign-in was cancelled." in answer.text


def test_session_cookie_is_httponly_lax_and_only_for_the_console(app: Flask) -> None:
    client = app.test_client()
    sign_in(client, "reader")
    cookie = client.get_cookie("promptsvc_console", path="/console/")
    assert cookie is not None
    assert cookie.http_only and cookie.same_site == "Lax" and not cookie.secure
    assert cookie.path == "/console/"


def test_session_cookie_is_secure_over_https(app: Flask) -> None:
    client = app.test_client()
    answer = client.get("/console/", base_url="https://localhost")
    header = answer.headers["Set-Cookie"]
    assert "promptsvc_console=" in header and "Secure" in header and "HttpOnly" in header


def test_the_api_never_gets_or_sets_a_session(
    app: Flask, console: Callable[..., FlaskClient]
) -> None:
    client = console("admin")
    answer = client.get("/api/v1/prompts")
    assert answer.status_code == 401  # the console's cookie is no API credential
    assert "Set-Cookie" not in answer.headers


def test_an_expiring_access_token_is_refreshed(console: Callable[..., FlaskClient]) -> None:
    client = console("writer")
    with client.session_transaction("/console/") as session:
        before = dict(session[SIGNED_IN])
        session[SIGNED_IN] = {**before, "expires_at": 0}
    assert client.get("/console/prompts").status_code == 200
    with client.session_transaction("/console/") as session:
        after = session[SIGNED_IN]
    assert after["access_token"] != before["access_token"]
    assert after["refresh_token"] != before["refresh_token"]  # rotated
    assert after["expires_at"] > 0


def test_a_disabled_person_is_signed_out_at_the_next_refresh(
    app: Flask, console: Callable[..., FlaskClient]
) -> None:
    client = console("writer")
    app.extensions["identity"].update_user(ORG, "writer", disabled=True)
    with client.session_transaction("/console/") as session:
        session[SIGNED_IN] = {**session[SIGNED_IN], "expires_at": 0}
    answer = client.get("/console/prompts")
    assert answer.status_code == 302
    # Back to the realm (the org is known), where this person can no longer sign in.
    assert answer.headers["Location"].startswith(f"/console/login?org={ORG}")
    with client.session_transaction("/console/") as session:
        assert SIGNED_IN not in session


def test_a_lowered_role_applies_at_the_next_refresh(
    app: Flask, console: Callable[..., FlaskClient]
) -> None:
    client = console("writer")
    app.extensions["identity"].update_user(ORG, "writer", role="Service Read")
    with client.session_transaction("/console/") as session:
        session[SIGNED_IN] = {**session[SIGNED_IN], "expires_at": 0}
    page = client.get("/console/prompts")
    assert "Service Read" in page.text and "New prompt" not in page.text


def test_a_tampered_session_is_no_session(console: Callable[..., FlaskClient]) -> None:
    client = console("reader")
    cookie = client.get_cookie("promptsvc_console", path="/console/")
    assert cookie is not None
    client.set_cookie("promptsvc_console", cookie.value[:-4] + "AAAA", path="/console/")
    assert client.get("/console/prompts").status_code == 302


def test_sign_out_ends_the_realm_session_too(
    app: Flask, console: Callable[..., FlaskClient]
) -> None:
    client = console("writer")
    with client.session_transaction("/console/") as session:
        refresh_token = session[SIGNED_IN]["refresh_token"]
    page = client.get("/console/prompts")
    answer = client.post("/console/logout", data={"csrf_token": csrf_token(page.text)})
    assert answer.status_code == 302
    logout = urlsplit(answer.headers["Location"])
    query = parse_qs(logout.query)
    assert logout.path == f"/realms/{ORG}/protocol/openid-connect/logout"
    assert query["id_token_hint"][0] and query["client_id"] == ["promptsvc-console"]
    assert query["post_logout_redirect_uri"] == ["http://localhost/console/"]
    back = client.get(f"{logout.path}?{logout.query}")
    assert back.status_code == 302
    assert back.headers["Location"].startswith("http://localhost/console/?state=")
    home = client.get(
        urlsplit(back.headers["Location"]).path + "?" + urlsplit(back.headers["Location"]).query
    )
    assert "You have signed out of acme." in home.text
    assert client.get("/console/prompts").status_code == 302
    # The realm session ended: its refresh token no longer works.
    refused = client.post(
        f"/realms/{ORG}/protocol/openid-connect/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": "promptsvc-console",
        },
    )
    assert refused.status_code == 400 and refused.json["error"] == "invalid_grant"
    # And the realm asks for the password again.
    to_realm = _start(client)
    login = client.get(to_realm.headers["Location"])
    assert login.status_code == 200 and 'name="password"' in login.text


def test_sign_out_needs_the_csrf_token(console: Callable[..., FlaskClient]) -> None:
    client = console("reader")
    assert client.post("/console/logout").status_code == 400
    assert client.get("/console/prompts").status_code == 200


@pytest.mark.parametrize("configured", [None, "k" * 40])
def test_sessions_hold_across_apps_sharing_storage(
    storage: Storage, configured: str | None
) -> None:
    """Two workers on one storage: a session made by one is accepted by the other, with
    PROMPTSVC_SECRET_KEY or with the secret kept in storage."""
    settings = Settings.from_env(
        {"PROMPTSVC_LOGIN_RATE_LIMIT_PER_IP": "off"},
        issuer_url="http://localhost",
        secret_key=configured,
    )
    first = create_app(settings, storage=storage)
    second = create_app(settings, storage=storage)
    first.extensions["identity"].create_user(ORG, "ada", "Service Read", PASSWORD)
    client = first.test_client()
    sign_in(client, "ada")
    cookie = client.get_cookie("promptsvc_console", path="/console/")
    assert cookie is not None
    other = second.test_client()
    other.set_cookie("promptsvc_console", cookie.value, path="/console/")
    assert other.get("/console/prompts").status_code == 200
    assert first.secret_key == second.secret_key
    if configured:
        assert first.secret_key == configured
    else:
        assert first.secret_key == storage.ensure_session_secret("ignored")


def test_sign_in_page_points_to_the_consoles_own_address(app: Flask) -> None:
    """The realm sends people back to the issuer URL's console only; a page opened
    under another host name says where to go instead of failing after sign-in."""
    elsewhere = app.test_client().get("/console/", base_url="http://127.0.0.1:8000")
    assert "open it there" in elsewhere.text and "http://localhost/console/" in elsewhere.text
    here = app.test_client().get("/console/")
    assert "open it there" not in here.text


def test_a_demoted_person_loses_the_old_role_at_the_next_page(
    app: Flask, console: Callable[..., FlaskClient]
) -> None:
    """The access token still says Service Write, the user is Service Read now: the
    console checks the user in storage on every request."""
    writer = console("writer")
    page = writer.get("/console/prompts")
    assert "Service Write" in page.text
    app.extensions["identity"].update_user(ORG, "writer", role="Service Read")
    page = writer.get("/console/prompts")
    assert page.status_code == 200
    assert "Service Read" in page.text
    assert "Create prompt" not in page.text  # a reader's page
    refused = writer.post(
        "/console/prompts", data={"name": "late", "csrf_token": csrf_token(page.text)}
    )
    assert refused.status_code == 403
    assert "Service Write" in refused.text  # the role the action needs
    with pytest.raises(PromptNotFound):
        app.extensions["promptsvc.storage"].get_prompt(ORG, "late")


def test_a_disabled_person_is_signed_out_at_the_next_page(
    app: Flask, console: Callable[..., FlaskClient]
) -> None:
    admin = console("admin")
    assert admin.get("/console/prompts").status_code == 200
    app.extensions["identity"].update_user(ORG, "admin", disabled=True)
    answer = admin.get("/console/prompts")
    assert answer.status_code == 302
    assert answer.headers["Location"].startswith(f"/console/login?org={ORG}")
    with admin.session_transaction("/console/") as session:
        assert SIGNED_IN not in session
