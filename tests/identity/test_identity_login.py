"""The authorization code flow with PKCE: the login page, codes, redirect URIs, and the
tokens a person gets. Each test runs on memory, real Redis, SQLite and PostgreSQL."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
from flask.testing import FlaskClient

from identity import Lifetimes
from identity.login import CSRF_COOKIE, SESSION_COOKIE
from identity.roles import SERVICE_READ, SERVICE_WRITE
from tests.clock import FakeClock
from tests.identity.identity_support import ISSUER, assert_oauth_error, claims_of
from tests.identity.people_support import (
    AUTH,
    CLI,
    CONSOLE,
    CONSOLE_CALLBACK,
    LOOPBACK,
    PASSWORD,
    TOKEN,
    People,
    Pkce,
    auth_params,
    code_for,
    exchange,
    form_of,
    redirect_params,
    sign_in,
    tokens_for,
)

INVALID_LOGIN = "Invalid username or password."


# --------------------------------------------------------------------------- the page


def test_login_page(people: People) -> None:
    page = people.client.get(AUTH, query_string=auth_params(Pkce.new()))
    assert page.status_code == 200
    assert page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert 'name="username"' in html and 'name="password"' in html
    assert 'type="password"' in html
    action, fields = form_of(page)
    assert action.startswith(AUTH + "?")  # posts back to the same URL, parameters kept
    assert parse_qs(urlsplit(action).query)["state"] == ["state-1"]
    assert set(fields) == {"csrf_token"}
    assert "<script" not in html  # works without JavaScript
    assert not re.search(r"(src|href)=\"https?://", html)  # nothing from a CDN
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["Cache-Control"] == "no-store"
    cookie = page.headers["Set-Cookie"]
    assert CSRF_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Path=/realms/acme/" in cookie
    css = re.search(r'href="([^"]+\.css)"', html)
    assert css is not None and people.client.get(css.group(1)).status_code == 200


def form_action(page: object) -> str:
    csp = page.headers["Content-Security-Policy"]  # type: ignore[attr-defined]
    match = re.search(r"form-action ([^;]*)", csp)
    assert match is not None, csp
    return match.group(1)


def test_login_page_lets_its_form_redirect_only_to_the_validated_loopback(
    people: People,
) -> None:
    """A browser applies form-action to the redirect after the post (Chromium does): the
    command line's loopback origin is allowed on its own sign-in page, nothing else."""
    pkce = Pkce.new()
    cli = people.client.get(AUTH, query_string=auth_params(pkce))
    assert form_action(cli) == "'self' http://127.0.0.1:8765"
    localhost = auth_params(pkce, redirect_uri="http://localhost:4242/cb")
    assert form_action(people.client.get(AUTH, query_string=localhost)) == (
        "'self' http://localhost:4242"
    )
    console = auth_params(pkce, client_id=CONSOLE, redirect_uri=CONSOLE_CALLBACK)
    assert form_action(people.client.get(AUTH, query_string=console)) == "'self'"
    elsewhere = auth_params(pkce, redirect_uri="https://attacker.example/cb")
    refused = people.client.get(AUTH, query_string=elsewhere)
    assert refused.status_code == 400 and form_action(refused) == "'self'"
    # A failed sign-in shows the form again, still able to finish.
    failed = people.client.post(
        AUTH + "?" + urlencode(auth_params(pkce)),
        data={"username": "nobody", "password": "wrong", "csrf_token": "x"},
    )
    assert form_action(failed) == "'self' http://127.0.0.1:8765"


def test_code_flow_gives_a_persons_tokens(people: People, clock: FakeClock) -> None:
    pkce = Pkce.new()
    answer = sign_in(people.client, auth_params(pkce, state="s t/a+te=%?&"))
    params = redirect_params(answer)
    assert answer.headers["Location"].startswith(LOOPBACK + "?")
    assert params["state"] == "s t/a+te=%?&"  # returned untouched
    session_cookie = answer.headers["Set-Cookie"]
    assert SESSION_COOKIE in session_cookie and "HttpOnly" in session_cookie
    assert "SameSite=Lax" in session_cookie and "Path=/realms/acme/" in session_cookie
    response = exchange(people.client, params["code"], pkce)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 300
    assert body["refresh_expires_in"] == Lifetimes().refresh
    assert body["not-before-policy"] == 0
    assert body["scope"] == "openid prompts:read prompts:write"
    ada = people.identity.storage.get_user("acme", "ada")
    assert ada is not None
    claims = claims_of(body["access_token"])
    now = int(clock())
    assert claims == {
        "iss": f"{ISSUER}/realms/acme",
        "sub": ada.user_id,
        "azp": CLI,
        "org": "acme",
        "roles": [SERVICE_WRITE],
        "realm_access": {"roles": [SERVICE_WRITE]},
        "scope": "openid prompts:read prompts:write",
        "iat": now,
        "exp": now + 300,
        "jti": claims["jti"],
        "typ": "Bearer",
        "aud": "promptsvc",
        "preferred_username": "ada",
        "sid": claims["sid"],
    }
    principal = people.identity.verify(f"Bearer {body['access_token']}")
    assert (principal.user_id, principal.client_id, principal.role) == (
        ada.user_id,
        CLI,
        SERVICE_WRITE,
    )


def test_id_token(people: People, clock: FakeClock) -> None:
    pkce = Pkce.new()
    code = code_for(people.client, pkce, nonce="n-0S6_WzA2Mj")
    body = exchange(people.client, code, pkce).json
    jwks = jwt.PyJWKSet.from_dict(people.identity.jwks())
    header = jwt.get_unverified_header(body["id_token"])
    assert header["alg"] == "RS256"
    claims = jwt.decode(
        body["id_token"],
        jwks[header["kid"]],
        algorithms=["RS256"],
        audience=CLI,
        issuer=f"{ISSUER}/realms/acme",
    )
    assert claims["nonce"] == "n-0S6_WzA2Mj"
    assert claims["preferred_username"] == "ada"
    assert claims["sub"] == claims_of(body["access_token"])["sub"]
    assert claims["sid"] == claims_of(body["access_token"])["sid"]
    assert claims["at_hash"]
    assert claims["auth_time"] <= int(clock())


def test_no_id_token_without_openid(people: People) -> None:
    body = tokens_for(people.client, scope="prompts:read")
    assert "id_token" not in body
    assert body["scope"] == "prompts:read"
    assert people.identity.verify(f"Bearer {body['access_token']}").role == SERVICE_READ


def test_the_console_client(people: People) -> None:
    pkce = Pkce.new()
    code = code_for(people.client, pkce, client_id=CONSOLE, redirect_uri=CONSOLE_CALLBACK)
    response = exchange(people.client, code, pkce, client_id=CONSOLE, redirect_uri=CONSOLE_CALLBACK)
    assert response.status_code == 200
    assert claims_of(response.json["access_token"])["azp"] == CONSOLE


def test_a_signed_in_person_gets_a_code_without_the_form(people: People) -> None:
    sign_in(people.client, auth_params(Pkce.new()))
    console = auth_params(Pkce.new(), client_id=CONSOLE, redirect_uri=CONSOLE_CALLBACK)
    again = people.client.get(AUTH, query_string=console)
    assert "code" in redirect_params(again)
    forced = people.client.get(AUTH, query_string=auth_params(Pkce.new(), prompt="login"))
    assert forced.status_code == 200 and 'name="password"' in forced.get_data(as_text=True)


def test_prompt_none_without_a_session(people: People) -> None:
    answer = people.client.get(AUTH, query_string=auth_params(Pkce.new(), prompt="none"))
    assert redirect_params(answer)["error"] == "login_required"


def test_role_scope_beyond_the_persons_role(people: People) -> None:
    """bob is a reader: asking for write sends invalid_scope back to the client."""
    answer = sign_in(people.client, auth_params(Pkce.new(), scope="prompts:write"), "bob")
    params = redirect_params(answer)
    assert params["error"] == "invalid_scope"
    assert params["state"] == "state-1"


# --------------------------------------------------------------------------- failed sign-in


def test_wrong_password_and_unknown_user_look_the_same(people: People) -> None:
    answers = []
    params = auth_params(Pkce.new())
    for username, password in (("ada", "not the password!"), ("nobody", PASSWORD),
                               ("NOBODY@x", "short"), ("x" * 300, PASSWORD)):  # fmt: skip
        answer = sign_in(people.client, params, username, password)
        assert answer.status_code == 200
        html = answer.get_data(as_text=True)
        assert INVALID_LOGIN in html
        assert SESSION_COOKIE not in answer.headers.get("Set-Cookie", "")
        answers.append(re.sub(r'value="[^"]*"', "", html))  # the username is echoed back
    assert answers[0] == answers[1] == answers[2]


def test_a_disabled_user_cannot_sign_in(people: People) -> None:
    people.identity.update_user("acme", "ada", disabled=True)
    answer = sign_in(people.client, auth_params(Pkce.new()))
    assert INVALID_LOGIN in answer.get_data(as_text=True)


def test_a_disabled_users_session_no_longer_signs_in(people: People) -> None:
    sign_in(people.client, auth_params(Pkce.new()))
    people.identity.update_user("acme", "ada", disabled=True)
    page = people.client.get(AUTH, query_string=auth_params(Pkce.new()))
    assert page.status_code == 200 and 'name="password"' in page.get_data(as_text=True)


def test_the_form_needs_its_csrf_token(people: People) -> None:
    page = people.client.get(AUTH, query_string=auth_params(Pkce.new()))
    action, fields = form_of(page)
    for token in ("", "forged", fields["csrf_token"] + "x"):
        answer = people.client.post(
            action, data={"csrf_token": token, "username": "ada", "password": PASSWORD}
        )
        assert answer.status_code == 400
        assert "expired" in answer.get_data(as_text=True)
    # A cross-site post carries no cookie at all (SameSite=Lax).
    people.client.delete_cookie(CSRF_COOKIE, path="/realms/acme/")
    answer = people.client.post(action, data={**fields, "username": "ada", "password": PASSWORD})
    assert answer.status_code == 400


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"username": "ada"}', "application/json"),
        ("username=ada&password=x", "text/plain"),
        ("", "application/x-www-form-urlencoded"),
        ("username=" + "a" * 5000 + "&password=" + "b" * 5000, "application/x-www-form-urlencoded"),
        ("%%%=%zz&&&username", "application/x-www-form-urlencoded"),
    ],
)
def test_malformed_login_posts(people: People, body: str, content_type: str) -> None:
    page = people.client.get(AUTH, query_string=auth_params(Pkce.new()))
    action, _ = form_of(page)
    answer = people.client.post(action, data=body, content_type=content_type)
    assert 400 <= answer.status_code < 500
    assert answer.mimetype == "text/html"
    assert SESSION_COOKIE not in answer.headers.get("Set-Cookie", "")


# --------------------------------------------------------------------------- bad requests


@pytest.mark.parametrize(
    "changes",
    [
        {"client_id": "nobody"},
        {"client_id": None},
        {"client_id": "acme-admin"},  # a key is no client for people
        {"redirect_uri": "https://evil.example/callback"},
        {"redirect_uri": None},
        {"redirect_uri": "http://127.0.0.1.evil.example/cb"},
        {"redirect_uri": "http://127.0.0.1@evil.example/cb"},
        {"redirect_uri": "http://localhost:99999/cb"},
        {"redirect_uri": "https://127.0.0.1:8765/cb"},
        {"redirect_uri": "http://127.0.0.1:8765/cb#fragment"},
        {"redirect_uri": "http://127.0.0.1:8765\\@evil.example/"},
        {"redirect_uri": "javascript:alert(1)"},
        {"client_id": CONSOLE, "redirect_uri": LOOPBACK},
        {"client_id": CONSOLE, "redirect_uri": CONSOLE_CALLBACK + "/../../evil"},
        {"client_id": CONSOLE, "redirect_uri": CONSOLE_CALLBACK + "?next=https://evil.example"},
    ],
)
def test_bad_client_or_redirect_uri_is_an_error_page(people: People, changes: dict) -> None:
    params = auth_params(Pkce.new(), **changes)
    answer = people.client.get(AUTH, query_string=params)
    assert answer.status_code == 400
    assert answer.mimetype == "text/html"
    assert "Location" not in answer.headers
    assert 'name="password"' not in answer.get_data(as_text=True)


def test_an_unknown_realm_is_an_error_page(people: People) -> None:
    params = auth_params(Pkce.new())
    answer = people.client.get("/realms/nope/protocol/openid-connect/auth", query_string=params)
    assert answer.status_code == 400
    assert "Location" not in answer.headers


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
        ({"code_challenge_method": None}, "invalid_request"),  # means plain
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": "too-short"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "prompts:admin"}, "invalid_scope"),
    ],
)
def test_bad_authorization_requests_go_back_to_the_client(
    people: People, changes: dict, error: str
) -> None:
    params = auth_params(Pkce.new(), state="keep me", **changes)
    answer = people.client.get(AUTH, query_string=params)
    got = redirect_params(answer)
    assert answer.headers["Location"].startswith(LOOPBACK + "?")
    assert got["error"] == error
    assert got["state"] == "keep me"


def test_any_loopback_port_and_path_for_the_cli(people: People) -> None:
    for redirect_uri in ("http://127.0.0.1:1/", "http://localhost:65535/a/b?c=d",
                         "http://[::1]:4000/cb", "http://127.0.0.1/cb"):  # fmt: skip
        pkce = Pkce.new()
        browser = people.app.test_client()
        code = code_for(browser, pkce, redirect_uri=redirect_uri)
        response = exchange(browser, code, pkce, redirect_uri=redirect_uri)
        assert response.status_code == 200, redirect_uri


# --------------------------------------------------------------------------- codes


def test_a_code_works_once(people: People) -> None:
    pkce = Pkce.new()
    code = code_for(people.client, pkce)
    assert exchange(people.client, code, pkce).status_code == 200
    assert_oauth_error(exchange(people.client, code, pkce), 400, "invalid_grant")


@pytest.mark.parametrize("lifetimes", [Lifetimes(code=1)])
def test_a_code_expires(people: People, clock: FakeClock) -> None:
    """Memory ages the code on the test clock; Redis drops it when its TTL runs out in
    real time, so both move (real expiry is the point here)."""
    pkce = Pkce.new()
    code = code_for(people.client, pkce)
    clock.advance(2)
    time.sleep(1.2)
    assert_oauth_error(exchange(people.client, code, pkce), 400, "invalid_grant")


def test_a_wrong_verifier_fails_and_spends_the_code(people: People) -> None:
    pkce = Pkce.new()
    code = code_for(people.client, pkce)
    wrong = Pkce.new()
    assert_oauth_error(exchange(people.client, code, wrong), 400, "invalid_grant")
    assert_oauth_error(exchange(people.client, code, pkce), 400, "invalid_grant")


@pytest.mark.parametrize(
    "changes",
    [
        {"code_verifier": None},
        {"code_verifier": "short"},
        {"redirect_uri": "http://127.0.0.1:9999/other"},
        {"client_id": CONSOLE},
        {"code": "not-a-code"},
        {"code": "x" * 5000},
    ],
)
def test_bad_code_exchanges(people: People, changes: dict) -> None:
    pkce = Pkce.new()
    code = code_for(people.client, pkce)
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": CLI,
        "redirect_uri": LOOPBACK,
        "code_verifier": pkce.verifier,
    }
    data.update(changes)
    response = people.client.post(TOKEN, data={k: v for k, v in data.items() if v is not None})
    assert response.status_code == 400
    assert response.json["error"] in ("invalid_grant", "invalid_request")


def test_a_public_client_sending_a_secret_is_refused(people: People) -> None:
    pkce = Pkce.new()
    code = code_for(people.client, pkce)
    response = exchange(people.client, code, pkce, client_secret="guess-guess-guess")
    assert_oauth_error(response, 401, "invalid_client")


def test_the_token_endpoint_needs_a_client_id_for_people(people: People) -> None:
    response = people.client.post(TOKEN, data={"grant_type": "authorization_code", "code": "x"})
    assert_oauth_error(response, 400, "invalid_request")


def test_tokens_with_a_role_change_follow_the_role(people: People) -> None:
    """ada is demoted between sign-in and code exchange: her token is a reader's."""
    pkce = Pkce.new()
    code = code_for(people.client, pkce)
    people.identity.update_user("acme", "ada", role=SERVICE_READ)
    body = exchange(people.client, code, pkce).json
    assert body["scope"] == "openid prompts:read"
    assert people.identity.verify(f"Bearer {body['access_token']}").role == SERVICE_READ


def test_a_disabled_user_gets_no_token_for_a_code(people: People) -> None:
    pkce = Pkce.new()
    code = code_for(people.client, pkce)
    people.identity.update_user("acme", "ada", disabled=True)
    assert_oauth_error(exchange(people.client, code, pkce), 400, "invalid_grant")


def test_clients_see_no_token_in_a_redirect(people: People, client: FlaskClient) -> None:
    answer = sign_in(people.client, auth_params(Pkce.new()))
    location = answer.headers["Location"]
    assert "access_token" not in location and "refresh_token" not in location
