"""One token model: a person's access token, from the realm's sign-in, works on the API
exactly like a key's (roles, tenancy, error answers), and what a person changes is
recorded against their user id."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from tests.identity.people_support import LOGOUT, PASSWORD, tokens_for


@pytest.fixture
def people(app: Flask) -> dict[str, Any]:
    """ada (Write), bob (Read) and cy (Admin) in acme, eve (Admin) in globex."""
    identity = app.extensions["identity"]
    made = {}
    for org, username, role in (
        ("acme", "ada", SERVICE_WRITE),
        ("acme", "bob", SERVICE_READ),
        ("acme", "cy", SERVICE_ADMIN),
        ("globex", "eve", SERVICE_ADMIN),
    ):
        made[username], _ = identity.create_user(org, username, role, PASSWORD)
    return made


def person_headers(app: Flask, username: str) -> dict[str, str]:
    """A bearer header for an acme person, signed in through the realm's login page."""
    body = tokens_for(app.test_client(), username=username)
    return {"Authorization": f"Bearer {body['access_token']}"}


def test_a_persons_changes_are_recorded_against_them(
    api: Any, app: Flask, people: dict[str, Any]
) -> None:
    ada = person_headers(app, "ada")
    created = api.post("/api/v1/prompts", role=None, headers=ada, json={"name": "greeting"})
    assert created.status_code == 201
    version = api.post(
        "/api/v1/prompts/greeting/versions", role=None, headers=ada, json={"content": "Hi"}
    )
    assert version.status_code == 201
    promoted = api.post("/api/v1/prompts/greeting/versions/1/promote", role=None, headers=ada)
    assert promoted.status_code == 200, promoted.json
    ada_id = people["ada"].user_id
    assert promoted.json["promotion"]["promoted_by"] == ada_id
    assert promoted.json["version"]["promoted_by"] == ada_id
    history = api.get("/api/v1/prompts/greeting/history", role=None, headers=ada).json
    assert history["items"][0]["promoted_by"] == ada_id
    stored = app.extensions["promptsvc.storage"].get_version("acme", "greeting", "1")
    assert stored.created_by == ada_id


def test_a_persons_role_decides_like_a_keys(api: Any, app: Flask, people: dict[str, Any]) -> None:
    api.create_prompt("greeting")
    bob = person_headers(app, "bob")
    assert api.get("/api/v1/prompts/greeting", role=None, headers=bob).status_code == 200
    denied = api.post("/api/v1/prompts", role=None, headers=bob, json={"name": "x"})
    by_key = api.post("/api/v1/prompts", role=SERVICE_READ, json={"name": "x"})
    assert denied.status_code == by_key.status_code == 403
    assert denied.json == by_key.json
    assert denied.headers["WWW-Authenticate"] == by_key.headers["WWW-Authenticate"]
    cy = person_headers(app, "cy")
    assert api.get("/api/v1/keys", role=None, headers=cy).status_code == 200
    assert api.get("/api/v1/keys", role=None, headers=bob).status_code == 403


def test_a_person_sees_only_their_org(api: Any, app: Flask, people: dict[str, Any]) -> None:
    api.create_prompt("secret-plan", org="globex")
    ada = person_headers(app, "ada")
    mine = api.get("/api/v1/prompts/secret-plan", role=None, headers=ada)
    assert mine.status_code == 404
    assert api.get("/api/v1/prompts", role=None, headers=ada).json["items"] == []


def test_a_persons_token_outlives_logout_and_disabling_until_exp(
    api: Any, app: Flask, people: dict[str, Any]
) -> None:
    """The API verifies tokens locally (no call to the issuer): signing out or disabling
    a person stops refresh and sign-in at once, and the access token at its exp."""
    client = app.test_client()
    body = tokens_for(client, username="ada")
    headers = {"Authorization": f"Bearer {body['access_token']}"}
    logout = client.post(
        LOGOUT, data={"client_id": "promptsvc-cli", "refresh_token": body["refresh_token"]}
    )
    assert logout.status_code == 204
    app.extensions["identity"].update_user("acme", "ada", disabled=True)
    assert api.get("/api/v1/prompts", role=None, headers=headers).status_code == 200


REALM_POSTS = [
    "/realms/acme/protocol/openid-connect/token",
    "/realms/acme/protocol/openid-connect/token/introspect",
    "/realms/acme/protocol/openid-connect/revoke",
    "/realms/acme/protocol/openid-connect/auth/device",
    "/realms/acme/protocol/openid-connect/auth?response_type=code&client_id=promptsvc-cli"
    "&redirect_uri=http://127.0.0.1:9/cb&code_challenge_method=S256"
    "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    "/realms/acme/protocol/openid-connect/logout",
    "/realms/acme/protocol/openid-connect/userinfo",
    "/realms/acme/device",
]


@pytest.mark.parametrize("path", REALM_POSTS)
def test_an_oversized_form_is_413(api: Any, people: dict[str, Any], path: str) -> None:
    body = "username=" + "a" * (1024 * 1024 + 10)
    r = api.client.post(path, data=body, content_type="application/x-www-form-urlencoded")
    assert r.status_code == 413
    assert r.json["code"] == "payload_too_large"


@pytest.mark.parametrize("path", REALM_POSTS)
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"%zz=%%%&&=&token=%", "application/x-www-form-urlencoded"),
        (b"\xff\xfe\x00garbage\x00", "application/x-www-form-urlencoded"),
        (b'{"token": "x"}', "application/json"),
        (b"--x\r\n\r\n--x--", "multipart/form-data; boundary=x"),
        (b"a=" + b"b" * 70000, "application/x-www-form-urlencoded"),
    ],
)
def test_malformed_forms_are_4xx(
    api: Any, people: dict[str, Any], path: str, body: bytes, content_type: str
) -> None:
    r = api.client.post(path, data=body, content_type=content_type)
    assert 400 <= r.status_code < 500, (r.status_code, r.get_data(as_text=True)[:300])
