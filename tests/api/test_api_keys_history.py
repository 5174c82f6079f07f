"""API keys (Service Admin) and promotion history."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc.api.responses import ApiKeyCreatedSchema, ApiKeySchema
from tests.api.test_api_people import person_headers
from tests.identity.people_support import PASSWORD

# --------------------------------------------------------------------------- keys


def test_create_key_shows_the_secret_once_and_it_works(api: Any) -> None:
    r = api.post("/api/v1/keys", json={"role": SERVICE_WRITE, "description": "ci deploys"})
    assert r.status_code == 201
    body = r.json
    assert set(body) == set(ApiKeyCreatedSchema().fields)
    assert body["role"] == SERVICE_WRITE
    assert body["description"] == "ci deploys"
    assert body["created_at"].endswith("Z")
    exchange = api.client.post(
        "/v1/auth/sdk-token",
        json={
            "account_id": "acme",
            "key_id": body["client_id"],
            "key_secret": body["client_secret"],
        },
    )
    assert exchange.status_code == 200
    token = exchange.json["access_token"]
    created = api.client.post(
        "/api/v1/prompts",
        json={"name": "by-new-key"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert created.status_code == 201
    listed = api.get("/api/v1/keys").json["items"]
    mine = next(k for k in listed if k["client_id"] == body["client_id"])
    assert "client_secret" not in mine
    assert body["client_secret"] not in str(listed)
    assert mine["user_id"] == body["user_id"]


def _key_headers(api: Any, created: dict[str, Any]) -> dict[str, str]:
    token = api.client.post(
        "/v1/auth/sdk-token",
        json={
            "account_id": "acme",
            "key_id": created["client_id"],
            "key_secret": created["client_secret"],
        },
    ).json["access_token"]
    return {"Authorization": f"Bearer {token}"}


def test_a_key_is_owned_by_its_maker_or_the_person_named(api: Any, app: Flask) -> None:
    identity = app.extensions["identity"]
    cy, _ = identity.create_user("acme", "cy", SERVICE_ADMIN, PASSWORD)
    ada, _ = identity.create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    cy_headers = person_headers(app, "cy")
    made = api.post("/api/v1/keys", role=None, headers=cy_headers, json={"role": SERVICE_ADMIN})
    assert made.status_code == 201 and made.json["owner"] == cy.user_id
    named = api.post(
        "/api/v1/keys", role=None, headers=cy_headers, json={"role": SERVICE_WRITE, "owner": "ada"}
    )
    assert named.status_code == 201 and named.json["owner"] == ada.user_id
    # A key made with a key has that key's owner; one from a key nobody owns, none.
    by_key = api.post(
        "/api/v1/keys", role=None, headers=_key_headers(api, made.json), json={"role": SERVICE_READ}
    )
    assert by_key.status_code == 201 and by_key.json["owner"] == cy.user_id
    ownerless = api.post("/api/v1/keys", json={"role": SERVICE_READ}).json
    assert ownerless["owner"] is None
    listed = {k["client_id"]: k["owner"] for k in api.get("/api/v1/keys").json["items"]}
    assert listed[made.json["client_id"]] == cy.user_id
    assert listed[named.json["client_id"]] == ada.user_id
    assert listed[by_key.json["client_id"]] == cy.user_id
    assert listed[ownerless["client_id"]] is None


@pytest.mark.parametrize("owner", ["nobody", "eve"])
def test_a_key_owner_must_be_a_user_of_the_org(api: Any, app: Flask, owner: str) -> None:
    app.extensions["identity"].create_user("globex", "eve", SERVICE_WRITE, PASSWORD)
    before = api.get("/api/v1/keys").json["items"]
    r = api.post("/api/v1/keys", json={"role": SERVICE_READ, "owner": owner})
    assert r.status_code == 400 and owner in r.json["message"], r.json
    assert api.get("/api/v1/keys").json["items"] == before


def test_new_key_belongs_to_the_callers_org(api: Any, app: Flask) -> None:
    body = api.post("/api/v1/keys", json={"role": SERVICE_READ}).json
    assert app.extensions["identity"].issue_token("acme", body["client_id"], body["client_secret"])
    assert body["client_id"] not in {
        k["client_id"] for k in api.get("/api/v1/keys", org="globex").json["items"]
    }


def test_list_keys(api: Any) -> None:
    api.tokens(SERVICE_READ)  # makes a second key in acme
    r = api.get("/api/v1/keys")
    assert r.status_code == 200
    assert set(r.json) == {"items"}
    items = r.json["items"]
    assert len(items) == 2
    for item in items:
        assert set(item) == set(ApiKeySchema().fields)
        assert item["revoked"] is False
    assert {i["role"] for i in items} == {"Service Admin", SERVICE_READ}


def test_revoke_key(api: Any) -> None:
    body = api.post("/api/v1/keys", json={"role": SERVICE_READ}).json
    r = api.delete(f"/api/v1/keys/{body['client_id']}")
    assert r.status_code == 204
    assert r.data == b""
    listed = {k["client_id"]: k for k in api.get("/api/v1/keys").json["items"]}
    assert listed[body["client_id"]]["revoked"] is True
    exchange = api.client.post(
        "/v1/auth/sdk-token",
        json={
            "account_id": "acme",
            "key_id": body["client_id"],
            "key_secret": body["client_secret"],
        },
    )
    assert exchange.status_code == 401


def test_revoke_missing_key_is_404(api: Any) -> None:
    r = api.delete("/api/v1/keys/nope")
    assert r.status_code == 404
    assert "nope" in r.json["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "role"),
        ({"role": "Service God"}, "role"),
        ({"role": "service read"}, "role"),
        ({"role": SERVICE_READ, "description": 3}, "description"),
        ({"role": SERVICE_READ, "client_secret": "chosen-by-me-123"}, "client_secret"),
    ],
)
def test_create_key_validation(api: Any, body: dict[str, Any], field: str) -> None:
    r = api.post("/api/v1/keys", json=body)
    assert r.status_code == 400
    assert field in r.json["errors"]


# --------------------------------------------------------------------------- history


def test_history_newest_first_with_notes_and_previous(api: Any) -> None:
    api.create_prompt("greeting")
    for _ in range(3):
        api.create_version()
    api.promote("greeting", 1, json={"notes": "launch"})
    api.promote("greeting", 2)
    api.post("/api/v1/prompts/greeting/versions/1/unarchive")
    api.promote("greeting", 1, json={"notes": "rollback"})
    r = api.get("/api/v1/prompts/greeting/history", role=SERVICE_READ)
    assert r.status_code == 200
    items = r.json["items"]
    assert [(i["version_number"], i["previous_version"], i["notes"]) for i in items] == [
        (1, 2, "rollback"),
        (2, 1, None),
        (1, None, "launch"),
    ]
    admin = api.tokens.user_ids[("acme", "Service Admin")]
    assert {i["promoted_by"] for i in items} == {admin}
    (key,) = [
        k for k in api.tokens.app.extensions["identity"].list_keys("acme") if k.user_id == admin
    ]
    assert {i["promoted_by_name"] for i in items} == {f"key {key.client_id}"}  # as the console
    assert len({i["history_id"] for i in items}) == 3
    assert r.json["next_cursor"] is None


def test_history_paginates(api: Any) -> None:
    api.create_prompt("greeting")
    for n in range(1, 6):
        api.create_version()
        api.promote("greeting", n)
    first = api.get("/api/v1/prompts/greeting/history?limit=2").json
    assert [i["version_number"] for i in first["items"]] == [5, 4]
    second = api.get(f"/api/v1/prompts/greeting/history?limit=2&cursor={first['next_cursor']}").json
    assert [i["version_number"] for i in second["items"]] == [3, 2]
    third = api.get(f"/api/v1/prompts/greeting/history?limit=2&cursor={second['next_cursor']}").json
    assert [i["version_number"] for i in third["items"]] == [1]
    assert third["next_cursor"] is None


def test_history_of_unpromoted_prompt_is_empty(api: Any) -> None:
    api.create_prompt("greeting")
    assert api.get("/api/v1/prompts/greeting/history").json == {"items": [], "next_cursor": None}


def test_history_errors(api: Any) -> None:
    assert api.get("/api/v1/prompts/nope/history").status_code == 404
    api.create_prompt("greeting")
    assert api.get("/api/v1/prompts/greeting/history?limit=500").status_code == 400
    assert api.get("/api/v1/prompts/greeting/history?cursor=@@").status_code == 400
