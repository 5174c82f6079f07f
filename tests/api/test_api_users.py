"""Users (Service Admin): create, list, change; errors in the API's shape."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity import users
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc.api.responses import UserCreatedSchema, UserSchema

PASSWORD = "a-password-of-some-length"


def create(
    api: Any, username: str = "ada", role: str = SERVICE_WRITE, org: str = "acme", **body: Any
) -> Any:
    r = api.post("/api/v1/users", org=org, json={"username": username, "role": role, **body})
    assert r.status_code == 201, r.json
    return r.json


def storage_of(app: Flask) -> Any:
    return app.extensions["promptsvc.storage"]


def test_create_with_a_password(api: Any, app: Flask) -> None:
    body = create(api, password=PASSWORD)
    assert set(body) == set(UserSchema().fields)  # no password: it was given
    assert (body["username"], body["role"], body["disabled"]) == ("ada", SERVICE_WRITE, False)
    assert body["created_at"].endswith("Z") and body["created_at"] == body["updated_at"]
    signed_in = users.authenticate(storage_of(app), "acme", "ada", PASSWORD)
    assert signed_in is not None and signed_in.user_id == body["user_id"]


def test_create_without_a_password_shows_the_generated_one_once(api: Any, app: Flask) -> None:
    body = create(api, "bob", SERVICE_READ)
    assert set(body) == set(UserCreatedSchema().fields)
    assert len(body["password"]) == 24
    assert users.authenticate(storage_of(app), "acme", "bob", body["password"]) is not None
    listed = api.get("/api/v1/users")
    assert body["password"] not in listed.get_data(as_text=True)


def test_list_oldest_first_and_only_the_callers_org(api: Any) -> None:
    created = [create(api, name, password=PASSWORD) for name in ("zoe", "ada", "mia")]
    create(api, "ada", org="globex", password=PASSWORD)  # another org's ada
    r = api.get("/api/v1/users")
    assert r.status_code == 200
    assert set(r.json) == {"items"}
    assert r.json["items"] == created
    for item in r.json["items"]:
        assert set(item) == set(UserSchema().fields)
        assert "password_hash" not in item and "password" not in item
    assert [u["username"] for u in api.get("/api/v1/users", org="globex").json["items"]] == ["ada"]
    assert api.get("/api/v1/users", org="initech").json == {"items": []}


def test_change_role_disabled_and_password(api: Any, app: Flask) -> None:
    created = create(api, password=PASSWORD)
    r = api.patch("/api/v1/users/ada", json={"role": SERVICE_ADMIN})
    assert r.status_code == 200
    assert r.json == {**created, "role": SERVICE_ADMIN, "updated_at": r.json["updated_at"]}
    assert r.json["updated_at"] >= created["updated_at"]
    r = api.patch("/api/v1/users/ada", json={"disabled": True})
    assert r.json["disabled"] is True and r.json["role"] == SERVICE_ADMIN
    assert users.authenticate(storage_of(app), "acme", "ada", PASSWORD) is None  # disabled
    r = api.patch("/api/v1/users/ada", json={"disabled": False, "password": "another password"})
    assert r.status_code == 200 and r.json["disabled"] is False
    assert "password" not in r.json
    assert users.authenticate(storage_of(app), "acme", "ada", PASSWORD) is None
    assert users.authenticate(storage_of(app), "acme", "ada", "another password") is not None
    assert api.get("/api/v1/users").json["items"] == [r.json]


def test_duplicate_username_is_409(api: Any) -> None:
    create(api, password=PASSWORD)
    r = api.post("/api/v1/users", json={"username": "ada", "role": SERVICE_ADMIN})
    assert r.status_code == 409
    assert r.json["code"] == r.json["error"] == "conflict"
    assert "ada" in r.json["message"]
    assert api.get("/api/v1/users").json["items"][0]["role"] == SERVICE_WRITE


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "username"),
        ({"username": "ada"}, "role"),
        ({"username": "Ada", "role": SERVICE_READ}, "username"),
        ({"username": "ada/x", "role": SERVICE_READ}, "username"),
        ({"username": "ada\n", "role": SERVICE_READ}, "username"),
        ({"username": "a" * 65, "role": SERVICE_READ}, "username"),
        ({"username": 7, "role": SERVICE_READ}, "username"),
        ({"username": "ada", "role": "Service God"}, "role"),
        ({"username": "ada", "role": SERVICE_READ, "password": "too-short"}, "password"),
        ({"username": "ada", "role": SERVICE_READ, "password": "p" * 1025}, "password"),
        ({"username": "ada", "role": SERVICE_READ, "password": None}, "password"),
        ({"username": "ada", "role": SERVICE_READ, "disabled": True}, "disabled"),
        ({"username": "ada", "role": SERVICE_READ, "user_id": "x"}, "user_id"),
    ],
)
def test_create_validation(api: Any, body: dict[str, Any], field: str) -> None:
    r = api.post("/api/v1/users", json=body)
    assert r.status_code == 400
    assert r.json["code"] == r.json["error"] == "bad_request"
    assert field in r.json["errors"]
    assert "too-short" not in r.get_data(as_text=True)
    assert api.get("/api/v1/users").json["items"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "_schema"),
        ({"role": "Owner"}, "role"),
        ({"role": None}, "role"),
        ({"disabled": "yes"}, "disabled"),
        ({"disabled": 1}, "disabled"),
        ({"password": "short"}, "password"),
        ({"username": "bob"}, "username"),
    ],
)
def test_change_validation(api: Any, body: dict[str, Any], field: str) -> None:
    created = create(api, password=PASSWORD)
    r = api.patch("/api/v1/users/ada", json=body)
    assert r.status_code == 400
    assert field in r.json["errors"]
    assert api.get("/api/v1/users").json["items"] == [created]


@pytest.mark.parametrize("username", ["nobody", "ADA", "a%2Fb", "x" * 200])
def test_changing_an_unknown_user_is_404(api: Any, username: str) -> None:
    create(api, password=PASSWORD)
    r = api.patch(f"/api/v1/users/{username}", json={"disabled": True})
    assert r.status_code == 404
    assert r.json["code"] == "not_found"


def test_another_orgs_user_is_404(api: Any) -> None:
    create(api, org="globex", password=PASSWORD)
    r = api.patch("/api/v1/users/ada", json={"disabled": True})
    assert r.status_code == 404
    assert api.get("/api/v1/users", org="globex").json["items"][0]["disabled"] is False


@pytest.mark.parametrize("role", [SERVICE_READ, SERVICE_WRITE])
def test_users_need_service_admin(api: Any, role: str) -> None:
    create(api, password=PASSWORD)
    for method, path, body in [
        ("GET", "/api/v1/users", None),
        ("POST", "/api/v1/users", {"username": "eve", "role": SERVICE_ADMIN}),
        ("PATCH", "/api/v1/users/ada", {"role": SERVICE_ADMIN}),
        ("PATCH", "/api/v1/users/ada", {}),  # 403 comes before the body's 400
    ]:
        r = api.request(method, path, role=role, json=body)
        assert r.status_code == 403, (method, path)
        assert r.json["message"] == "forbidden"
        assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
    assert [u["username"] for u in api.get("/api/v1/users").json["items"]] == ["ada"]
    assert api.get("/api/v1/users").json["items"][0]["role"] == SERVICE_WRITE


def test_users_need_a_token(api: Any) -> None:
    for method, path in [("GET", "/api/v1/users"), ("POST", "/api/v1/users"),
                         ("PATCH", "/api/v1/users/ada")]:  # fmt: skip
        r = api.request(method, path, role=None, json={"username": "x", "role": SERVICE_READ})
        assert r.status_code == 401, (method, path)


def test_not_json_is_415(api: Any) -> None:
    r = api.post("/api/v1/users", data="username=ada", content_type="text/plain")
    assert r.status_code == 415
    assert r.json["code"] == "unsupported_media_type"


def test_users_are_in_the_openapi_document(api: Any) -> None:
    spec = api.client.get("/openapi.json").json
    assert {"get", "post"} <= set(spec["paths"]["/api/v1/users"])
    assert "patch" in spec["paths"]["/api/v1/users/{username}"]
    created = spec["components"]["schemas"]["UserCreate"]["properties"]
    assert created["password"]["minLength"] == 12
