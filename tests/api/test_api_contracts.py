"""Variable contracts through the API: versions carry variables_schema and examples,
problems are 400 naming the variable or example, a breaking promotion is 409
breaking_change with its changes unless acknowledged (and then recorded), reviews show
and apply the check, and the diff shows the contracts compared."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_READ, SERVICE_WRITE
from tests.api.test_api_people import person_headers
from tests.identity.people_support import PASSWORD

VERSIONS = "/api/v1/prompts/greeting/versions"
SCHEMA: dict[str, Any] = {
    "name": {"type": "string", "description": "who is greeted"},
    "count": {"type": "integer", "default": 1},
}
EXAMPLES: list[dict[str, Any]] = [{"name": "ada", "variables": {"name": "Ada", "count": 2}}]
CONTENT = "Hi {{name}} x{{count}}"


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.json
    body: dict[str, Any] = response.json
    assert body["code"] == code and body["error"] == code and body["message"]
    return body


def create(api: Any, content: str = CONTENT, **body: Any) -> Any:
    return api.post(VERSIONS, json={"content": content, **body}, role=SERVICE_WRITE)


@pytest.fixture
def prompt(api: Any) -> Any:
    """greeting v1 (SCHEMA, EXAMPLES) in production."""
    api.create_prompt("greeting")
    assert create(api, variables_schema=SCHEMA, examples=EXAMPLES).status_code == 201
    api.promote("greeting", 1)
    return api


def test_a_version_carries_its_contract(api: Any) -> None:
    api.create_prompt("greeting")
    made = create(api, variables_schema=SCHEMA, examples=[{"variables": {"name": "Bo"}}])
    assert made.status_code == 201, made.json
    assert made.json["variables_schema"] == SCHEMA
    assert made.json["examples"] == [{"name": None, "variables": {"name": "Bo"}}]
    for url in (f"{VERSIONS}/1", "/api/v1/prompts/greeting/latest"):
        read = api.get(url, role=SERVICE_READ)
        assert read.status_code == 200 and read.json == made.json
    api.promote("greeting", 1)
    production = api.get("/api/v1/prompts/greeting/production", role=SERVICE_READ)
    assert production.json["variables_schema"] == SCHEMA
    etag = production.headers["ETag"]
    again = api.get(
        "/api/v1/prompts/greeting/production", role=SERVICE_READ, headers={"If-None-Match": etag}
    )
    assert again.status_code == 304
    listed = api.get(VERSIONS, role=SERVICE_READ).json["items"][0]
    assert listed["examples"] == made.json["examples"]


def test_without_a_schema_the_implied_one_is_shown(api: Any) -> None:
    api.create_prompt("greeting")
    made = create(api)
    assert made.json["variables_schema"] == {
        "name": {"type": "string", "required": True},
        "count": {"type": "string", "required": True},
    }
    assert made.json["examples"] == []


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"variables_schema": {"name": {"type": "string"}}}, "variables_schema", "'count'"),
        (
            {"variables_schema": {**SCHEMA, "age": {"type": "integer"}}},
            "variables_schema.age",
            "not a variable",
        ),
        (
            {"variables_schema": {**SCHEMA, "count": {"type": "int"}}},
            "variables_schema.count",
            "type must be",
        ),
        (
            {"variables_schema": {**SCHEMA, "count": {"type": "integer", "default": "1"}}},
            "variables_schema.count",
            'default "1" is not an integer',
        ),
        (
            {"variables_schema": SCHEMA, "examples": [{"variables": {"name": "A", "count": "2"}}]},
            "examples[0]",
            'expected integer, got string "2"',
        ),
        (
            {"variables_schema": SCHEMA, "examples": [{"variables": {"name": "A", "x": 1}}]},
            "examples[0]",
            "'x' is not a variable",
        ),
        (
            {"variables_schema": SCHEMA, "examples": [{"variables": {"name": "A"}}] * 21},
            "examples",
            "at most 20",
        ),
    ],
)
def test_contract_problems_are_400_naming_them(
    api: Any, body: dict[str, Any], field: str, says: str
) -> None:
    api.create_prompt("greeting")
    bad = error(create(api, **body), 400, "bad_request")
    assert says in " ".join(bad["errors"][field]), bad
    assert field in bad["message"]
    assert api.get(VERSIONS).json["items"] == []


def test_malformed_contract_fields_are_400(api: Any) -> None:
    api.create_prompt("greeting")
    for body in ({"variables_schema": "x"}, {"examples": {"a": 1}}, {"examples": ["x"]}):
        error(create(api, **body), 400, "bad_request")


def test_editing_a_draft_keeps_or_replaces_its_contract(prompt: Any) -> None:
    assert create(prompt, variables_schema=SCHEMA, examples=EXAMPLES).status_code == 201
    url = f"{VERSIONS}/2"
    # Content only: the contract stays, and must still fit the variables.
    kept = prompt.patch(url, json={"content": "Hello {{name}} x{{count}}"})
    assert kept.status_code == 200, kept.json
    assert (kept.json["variables_schema"], kept.json["examples"]) == (SCHEMA, EXAMPLES)
    misfit = error(prompt.patch(url, json={"content": "Hello {{who}}"}), 400, "bad_request")
    assert "'who'" in misfit["message"]
    # The contract alone, with the content it must fit.
    narrowed = {**SCHEMA, "name": {"type": "string", "enum": ["Ada"]}}
    edited = prompt.patch(url, json={"variables_schema": narrowed})
    assert edited.status_code == 200 and edited.json["variables_schema"] == narrowed
    assert edited.json["content"] == "Hello {{name}} x{{count}}"
    # null clears: the implied contract again, and no examples.
    cleared = prompt.patch(url, json={"variables_schema": None, "examples": None})
    assert cleared.json["variables_schema"]["count"] == {"type": "string", "required": True}
    assert cleared.json["examples"] == []
    error(prompt.patch(url, json={}), 400, "bad_request")
    error(prompt.patch(f"{VERSIONS}/1", json={"examples": []}), 409, "conflict")


def test_breaking_promotion_is_409_with_its_changes(prompt: Any) -> None:
    # count loses its default (newly required) and v1's example sends count 2 to a
    # declared string (a contract of plain required strings would accept any value).
    candidate = {"name": {"type": "string"}, "count": {"type": "string", "description": "text"}}
    assert create(prompt, variables_schema=candidate).status_code == 201
    refused = error(prompt.post(f"{VERSIONS}/2/promote"), 409, "breaking_change")
    assert [(c["variable"], c["change"]) for c in refused["changes"]] == [
        ("count", "newly_required"),
        ("count", "type_changed"),
        ("count", "example_failed"),
    ]
    assert all(c["detail"] for c in refused["changes"])
    assert prompt.get("/api/v1/prompts/greeting/production").json["version"] == 1
    assert len(prompt.get("/api/v1/prompts/greeting/history").json["items"]) == 1
    # allow_breaking needs notes.
    bad = error(
        prompt.post(f"{VERSIONS}/2/promote", json={"allow_breaking": True}), 400, "bad_request"
    )
    assert "notes" in bad["errors"]
    done = prompt.post(
        f"{VERSIONS}/2/promote", json={"allow_breaking": True, "notes": "count is text now"}
    )
    assert done.status_code == 200, done.json
    assert done.json["promotion"]["breaking"] is True
    record = prompt.get("/api/v1/prompts/greeting/history").json["items"][0]
    assert (record["breaking"], record["notes"]) == (True, "count is text now")


def test_compatible_promotion_is_recorded_unbroken(prompt: Any) -> None:
    widened = {"name": {"type": "string"}, "count": {"type": "integer", "required": False}}
    assert create(prompt, variables_schema=widened).status_code == 201
    done = prompt.promote("greeting", 2)
    assert done["promotion"]["breaking"] is False


def test_placement_and_rollback(prompt: Any) -> None:
    prompt.post("/api/v1/environments", json={"name": "staging"})
    assert (
        create(prompt, variables_schema={**SCHEMA, "count": {"type": "string"}}).status_code == 201
    )
    staging = {"environment": "staging"}
    assert prompt.post(f"{VERSIONS}/1/promote", json=staging).status_code == 200
    refused = error(prompt.post(f"{VERSIONS}/2/promote", json=staging), 409, "breaking_change")
    assert {c["change"] for c in refused["changes"]} == {
        "newly_required",
        "type_changed",
        "example_failed",  # v1's example sends count 2, not a string
    }
    ok = {**staging, "allow_breaking": True, "notes": "numbers"}
    assert prompt.post(f"{VERSIONS}/2/promote", json=ok).json["promotion"]["breaking"] is True
    back = prompt.post("/api/v1/prompts/greeting/rollback", json=staging)
    assert back.status_code == 200
    # Exempt from the check, but recorded: count was a string, v1 wants an integer.
    assert back.json["promotion"]["breaking"] is True


def test_diff_shows_contracts_and_breaking(prompt: Any) -> None:
    candidate = {"name": {"type": "string", "enum": ["Ada"]}, "tone": {"type": "string"}}
    assert create(prompt, "Hi {{name}} {{tone}}", variables_schema=candidate).status_code == 201
    diff = prompt.get("/api/v1/prompts/greeting/diff?from=production&to=latest", role=SERVICE_READ)
    assert diff.status_code == 200
    assert diff.json["variables_schema"] == {
        "added": {"tone": {"type": "string"}},
        "removed": {"count": {"type": "integer", "default": 1}},
        "changed": {"name": {"from": SCHEMA["name"], "to": candidate["name"]}},
    }
    assert [(c["variable"], c["change"]) for c in diff.json["breaking"]] == [
        ("name", "enum_narrowed"),
        ("tone", "newly_required"),
        ("tone", "example_failed"),
    ]
    same = prompt.get("/api/v1/prompts/greeting/diff?from=1&to=1", role=SERVICE_READ).json
    assert same["breaking"] == [] and same["variables_schema"]["changed"] == {}


@pytest.fixture
def reviewed(prompt: Any, app: Flask) -> dict[str, dict[str, str]]:
    """Production needs one approval; v2 changes count's type (breaking)."""
    identity = app.extensions["identity"]
    identity.create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    candidate = {**SCHEMA, "count": {"type": "string", "default": "1"}}
    assert create(prompt, variables_schema=candidate).status_code == 201
    prompt.patch("/api/v1/environments/production", json={"required_approvals": 1})
    return {"ada": person_headers(app, "ada")}


def test_reviews_show_and_apply_the_check(prompt: Any, reviewed: dict[str, dict[str, str]]) -> None:
    reviews = "/api/v1/prompts/greeting/reviews"
    body = {"version": 2, "environment": "production"}
    refused = error(prompt.post(reviews, json=body, role=SERVICE_WRITE), 409, "breaking_change")
    # v1's example sends count 2, which is not a string.
    assert [c["change"] for c in refused["changes"]] == ["type_changed", "example_failed"]
    error(prompt.post(reviews, json={**body, "allow_breaking": True}), 400, "bad_request")
    opened = prompt.post(
        reviews, json={**body, "allow_breaking": True, "notes": "numbers"}, role=SERVICE_WRITE
    )
    assert opened.status_code == 201, opened.json
    assert opened.json["allow_breaking"] is True
    assert [(c["variable"], c["change"]) for c in opened.json["breaking"]] == [
        ("count", "type_changed"),
        ("count", "example_failed"),
    ]
    rid = opened.json["review_id"]
    applied = prompt.request(
        "POST", f"/api/v1/reviews/{rid}/approve", role=None, headers=reviewed["ada"]
    )
    assert applied.status_code == 200 and applied.json["status"] == "applied"
    record = prompt.get("/api/v1/prompts/greeting/history").json["items"][0]
    assert (record["review_id"], record["breaking"]) == (rid, True)


def test_a_requested_version_cannot_become_breaking(
    prompt: Any, reviewed: dict[str, dict[str, str]]
) -> None:
    prompt.patch(f"{VERSIONS}/2", json={"variables_schema": SCHEMA})
    opened = prompt.post(
        "/api/v1/prompts/greeting/reviews", json={"version": 2, "environment": "production"}
    )
    assert opened.status_code == 201 and opened.json["breaking"] == []
    # The open review freezes the draft (docs/api.md section 5, rule 2a).
    frozen = prompt.patch(
        f"{VERSIONS}/2", json={"variables_schema": {**SCHEMA, "count": {"type": "integer"}}}
    )
    assert error(frozen, 409, "conflict")["reason"] == "frozen"
    url = f"/api/v1/reviews/{opened.json['review_id']}"
    approved = prompt.request("POST", url + "/approve", role=None, headers=reviewed["ada"])
    assert approved.status_code == 200, approved.json
    assert approved.json["status"] == "applied"
