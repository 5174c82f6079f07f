"""API keys (Service Admin) and promotion history."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc.api.responses import ApiKeyCreatedSchema, ApiKeySchema

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
