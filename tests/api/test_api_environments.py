"""Environments through the API: the list and its changes, promotion and rollback with
``environment``, the environment read (ETag/304, on the lean read path), and every
bad input's answer in the contract's shape."""

from __future__ import annotations

from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE
from tests.api.test_api_read_path import answered, dispatched

ENVS = "/api/v1/environments"
VERSIONS = "/api/v1/prompts/greeting/versions"
STAGING = "/api/v1/prompts/greeting/environments/staging"
__all__ = ["answered", "dispatched"]  # fixtures of the read path's tests


@pytest.fixture
def prompt(api: Any) -> Any:
    api.create_prompt("greeting")
    for text in ["one", "two", "three"]:
        api.create_version("greeting", text)
    assert api.post(ENVS, json={"name": "staging", "description": "pre"}).status_code == 201
    return api


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.json
    body: dict[str, Any] = response.json
    assert body["code"] == code and body["error"] == code and body["message"]
    return body


def test_list_create_change_delete(api: Any) -> None:
    assert api.get(ENVS, role=SERVICE_READ).json == {
        "items": [
            {"name": "production", "required_approvals": 0, "description": None, "created_at": None}
        ]
    }
    made = api.post(ENVS, json={"name": "qa-1", "required_approvals": 2, "description": "d"})
    assert made.status_code == 201 and made.json["required_approvals"] == 2
    assert made.json["created_at"].endswith("Z")
    assert api.get(f"{ENVS}/qa-1", role=SERVICE_READ).json == made.json
    changed = api.patch(f"{ENVS}/qa-1", json={"required_approvals": 0, "description": None})
    assert changed.status_code == 200
    assert (changed.json["required_approvals"], changed.json["description"]) == (0, None)
    production = api.patch(f"{ENVS}/production", json={"required_approvals": 1})
    assert production.json["required_approvals"] == 1
    names = [e["name"] for e in api.get(ENVS).json["items"]]
    assert names == ["production", "qa-1"]
    assert api.delete(f"{ENVS}/qa-1").status_code == 204
    error(api.delete(f"{ENVS}/qa-1"), 404, "not_found")
    error(api.delete(f"{ENVS}/production"), 409, "conflict")


def test_production_exists_already(api: Any) -> None:
    """A taken name, production too, is 409 reason exists (docs/api.md section 15)."""
    api.post(ENVS, json={"name": "staging"})
    for name in ("production", "staging"):
        body = error(api.post(ENVS, json={"name": name}), 409, "conflict")
        assert body["reason"] == "exists" and name in body["message"], body


@pytest.mark.parametrize(
    "body",
    [
        {"name": "latest"},
        {"name": "Staging"},
        {"name": "1x"},
        {"name": "x" * 33},
        {"name": "ok", "required_approvals": 4},
        {"name": "ok", "required_approvals": "1"},
        {},
    ],
)
def test_bad_environments_are_400(api: Any, body: dict[str, Any]) -> None:
    body_ = error(api.post(ENVS, json=body), 400, "bad_request")
    assert body_["errors"]


def test_roles_and_duplicates(api: Any) -> None:
    error(api.post(ENVS, json={"name": "qa"}, role=SERVICE_WRITE), 403, "forbidden")
    assert api.post(ENVS, json={"name": "qa"}).status_code == 201
    error(api.post(ENVS, json={"name": "qa"}), 409, "conflict")
    error(api.patch(f"{ENVS}/nope", json={"required_approvals": 1}), 404, "not_found")
    error(
        api.patch(f"{ENVS}/qa", json={"required_approvals": 1}, role=SERVICE_WRITE),
        403,
        "forbidden",
    )


def test_promote_into_an_environment_and_read_it(prompt: Any) -> None:
    done = prompt.post(f"{VERSIONS}/2/promote", json={"environment": "staging", "notes": "n"})
    assert done.status_code == 200, done.json
    assert done.json["version"]["status"] == "draft"
    assert done.json["version"]["environments"] == ["staging"]
    assert done.json["promotion"]["environment"] == "staging"
    assert done.json["promotion"]["review_id"] is None
    read = prompt.get(STAGING, role=SERVICE_READ)
    assert read.status_code == 200 and read.json["version"] == 2
    etag = read.headers["ETag"]
    again = prompt.get(STAGING, role=SERVICE_READ, headers={"If-None-Match": etag})
    assert again.status_code == 304
    production = prompt.get("/api/v1/prompts/greeting/environments/production")
    error(production, 404, "not_found")
    prompt.promote("greeting", 2)
    production = prompt.get("/api/v1/prompts/greeting/environments/production")
    assert production.json["environments"] == ["production", "staging"]
    moved = prompt.get(STAGING, headers={"If-None-Match": etag})
    assert moved.status_code == 200 and moved.headers["ETag"] != etag  # environments changed
    history = prompt.get("/api/v1/prompts/greeting/history").json["items"]
    assert [(h["environment"], h["version_number"]) for h in history] == [
        ("production", 2),
        ("staging", 2),
    ]


def test_the_environment_read_takes_the_lean_path(
    prompt: Any, answered: list[str], dispatched: list[str]
) -> None:
    prompt.post(f"{VERSIONS}/1/promote", json={"environment": "staging"})
    assert prompt.get(STAGING).status_code == 200
    assert prompt.get(STAGING + "x").status_code == 404
    assert answered == [f"GET {STAGING}", f"GET {STAGING}x"]
    assert dispatched == [f"POST {VERSIONS}/1/promote"]


def test_environment_read_errors(prompt: Any) -> None:
    body = error(prompt.get(STAGING), 404, "not_found")
    assert "staging" in body["message"]
    error(prompt.get("/api/v1/prompts/greeting/environments/nope"), 404, "not_found")
    error(prompt.get("/api/v1/prompts/nope/environments/staging"), 404, "not_found")
    assert prompt.get(STAGING, role=None).status_code == 401


def test_guarded_promotion_in_an_environment(prompt: Any) -> None:
    url = f"{VERSIONS}/1/promote"
    assert (
        prompt.post(url, json={"environment": "staging", "expected_version": None}).status_code
        == 200
    )
    refused = prompt.post(
        f"{VERSIONS}/2/promote", json={"environment": "staging", "expected_version": None}
    )
    body = error(refused, 409, "conflict")
    assert body["current_version"] == 1 and "current_production_version" not in body
    alias = prompt.post(
        f"{VERSIONS}/2/promote",
        json={"environment": "staging", "expected_production_version": 1},
    )
    error(alias, 400, "bad_request")
    prod = prompt.post(f"{VERSIONS}/2/promote", json={"expected_production_version": 3})
    body = error(prod, 409, "conflict")
    assert body["current_production_version"] is None and body["current_version"] is None


def test_promotion_refusals(prompt: Any) -> None:
    error(prompt.post(f"{VERSIONS}/1/promote", json={"environment": "nope"}), 404, "not_found")
    prompt.post(f"{VERSIONS}/3/archive")
    refused = prompt.post(f"{VERSIONS}/3/promote", json={"environment": "staging"})
    assert "archived" in error(refused, 409, "conflict")["message"]
    prompt.patch(f"{ENVS}/staging", json={"required_approvals": 1})
    protected = prompt.post(f"{VERSIONS}/1/promote", json={"environment": "staging"})
    assert "review" in error(protected, 409, "review_required")["message"]
    prompt.patch(f"{ENVS}/production", json={"required_approvals": 2})
    error(prompt.post(f"{VERSIONS}/1/promote"), 409, "review_required")
    assert prompt.get("/api/v1/prompts/greeting/history").json["items"] == []


def test_rollback_in_an_environment(prompt: Any) -> None:
    for n in (1, 2):
        prompt.post(f"{VERSIONS}/{n}/promote", json={"environment": "staging"})
    prompt.patch(f"{ENVS}/staging", json={"required_approvals": 1})
    done = prompt.post(
        "/api/v1/prompts/greeting/rollback", json={"environment": "staging", "expected_version": 2}
    )
    assert done.status_code == 200, done.json
    assert (done.json["promotion"]["environment"], done.json["version"]["version"]) == (
        "staging",
        1,
    )
    assert prompt.get(STAGING).json["version"] == 1
    error(
        prompt.post("/api/v1/prompts/greeting/rollback", json={"environment": "nope"}),
        404,
        "not_found",
    )


def test_archive_takes_a_version_out(prompt: Any) -> None:
    prompt.post(f"{VERSIONS}/1/promote", json={"environment": "staging"})
    archived = prompt.post(f"{VERSIONS}/1/archive")
    assert archived.json["environments"] == []
    error(prompt.get(STAGING), 404, "not_found")
