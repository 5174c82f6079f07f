"""Safe releases over HTTP: guarded promote, rollback and diff (status codes, bodies, roles)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE

BASE = "/api/v1/prompts/greeting"


@pytest.fixture
def versions(api: Any) -> list[dict[str, Any]]:
    """greeting with four drafts."""
    api.create_prompt("greeting")
    return [api.create_version(content=f"Hi {{{{name}}}} {i}\n") for i in range(1, 5)]


def production(api: Any) -> int | None:
    number: int | None = api.get(BASE).json["production_version"]
    return number


def history(api: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.get(f"{BASE}/history").json["items"]
    return items


def assert_conflict(r: Any, current: int | None) -> None:
    assert r.status_code == 409, r.json
    assert r.json == {
        "code": "conflict",
        "error": "conflict",
        "message": r.json["message"],
        "reason": "version_changed",
        "current_production_version": current,
        "current_version": current,
    }
    assert "greeting" in r.json["message"]


# --------------------------------------------------------------------------- guarded promote


def test_guarded_promote_that_holds(api: Any, versions: Any) -> None:
    r = api.post(f"{BASE}/versions/1/promote", json={"expected_production_version": None})
    assert r.status_code == 200
    r = api.post(
        f"{BASE}/versions/{versions[1]['version_id']}/promote",
        role=SERVICE_WRITE,
        json={"expected_production_version": 1, "notes": "v2"},
    )
    assert r.status_code == 200
    assert r.json["version"]["version"] == 2 and r.json["version"]["status"] == "published"
    assert r.json["promotion"]["previous_version"] == 1 and r.json["promotion"]["notes"] == "v2"
    assert "current_production_version" not in r.json


@pytest.mark.parametrize(
    ("promoted", "expected", "current"),
    [([], 1, None), ([1], None, 1), ([1], 3, 1), ([1, 2], 1, 2)],
)
def test_guarded_promote_that_fails_is_409_and_changes_nothing(
    api: Any, versions: Any, promoted: list[int], expected: int | None, current: int | None
) -> None:
    for n in promoted:
        api.promote("greeting", n)
    before = (api.get(f"{BASE}/versions").json, history(api))
    r = api.post(f"{BASE}/versions/4/promote", json={"expected_production_version": expected})
    assert_conflict(r, current)
    assert (api.get(f"{BASE}/versions").json, history(api)) == before


def test_unguarded_promote_is_unchanged(api: Any, versions: Any) -> None:
    api.promote("greeting", 1)
    r = api.post(f"{BASE}/versions/2/promote", json={"notes": "no guard"})
    assert r.status_code == 200 and r.json["promotion"]["previous_version"] == 1
    assert api.post(f"{BASE}/versions/3/promote").status_code == 200
    assert production(api) == 3


@pytest.mark.parametrize("bad", ["1", True, 1.5, 0, -2, [1], {"n": 1}])
def test_expected_production_version_must_be_a_positive_integer_or_null(
    api: Any, versions: Any, bad: Any
) -> None:
    r = api.post(f"{BASE}/versions/1/promote", json={"expected_production_version": bad})
    assert r.status_code == 400
    assert r.json["code"] == "bad_request"
    assert "expected_production_version" in r.json["errors"]
    assert production(api) is None


def test_promote_404_before_guard_409(api: Any, versions: Any) -> None:
    r = api.post(f"{BASE}/versions/9/promote", json={"expected_production_version": 5})
    assert r.status_code == 404 and "'9'" in r.json["message"]


# --------------------------------------------------------------------------- rollback


def test_rollback_to_the_previous_production_version(api: Any, versions: Any) -> None:
    api.promote("greeting", 1)
    api.promote("greeting", 2)
    r = api.post(f"{BASE}/rollback", role=SERVICE_WRITE)
    assert r.status_code == 200
    version, promotion = r.json["version"], r.json["promotion"]
    assert set(r.json) == {"version", "promotion"}
    assert version["version"] == 1 and version["version_id"] == versions[0]["version_id"]
    assert version["status"] == "published" and version["is_production"] is True
    writer = api.tokens.user_ids[("acme", SERVICE_WRITE)]
    assert version["promoted_by"] == writer and version["promoted_at"] == promotion["promoted_at"]
    assert promotion["history_id"].startswith("h_")
    assert promotion["prompt_id"] == version["prompt_id"]
    assert promotion["version_number"] == 1 and promotion["previous_version"] == 2
    assert promotion["promoted_by"] == writer and promotion["notes"] == "rollback to v1"
    listed = history(api)[0]
    assert listed.pop("promoted_by_name").startswith("key ")  # the listing names who
    assert listed == promotion
    assert api.get(f"{BASE}/versions/2").json["status"] == "archived"
    assert api.get(f"{BASE}/production").json["version"] == 1


def test_rollback_with_to_version_notes_and_guard(api: Any, versions: Any) -> None:
    for n in (1, 2, 3):
        api.promote("greeting", n)
    body = {"to_version": 1, "notes": "2 and 3 were bad", "expected_production_version": 3}
    r = api.post(f"{BASE}/rollback", json=body)
    assert r.status_code == 200
    assert r.json["promotion"]["version_number"] == 1
    assert r.json["promotion"]["previous_version"] == 3
    assert r.json["promotion"]["notes"] == "2 and 3 were bad"
    statuses = {v["version"]: v["status"] for v in api.get(f"{BASE}/versions").json["items"]}
    assert statuses == {4: "draft", 3: "archived", 2: "archived", 1: "published"}


def test_rollback_to_a_version_back_to_draft(api: Any, versions: Any) -> None:
    api.promote("greeting", 1)
    api.promote("greeting", 2, json={"archive_previous_production": False})
    assert api.get(f"{BASE}/versions/1").json["status"] == "draft"
    r = api.post(f"{BASE}/rollback", json={"to_version": None, "notes": None})
    assert r.status_code == 200 and r.json["version"]["version"] == 1
    assert r.json["promotion"]["notes"] == "rollback to v1"


@pytest.mark.parametrize(
    ("promoted", "body", "words"),
    [
        ([], {}, "no production version"),
        ([1], {}, "no earlier one"),
        ([1, 2], {"to_version": 3}, "never been production"),
        ([1, 2], {"to_version": 2}, "production already"),
        ([1, 2], {"to_version": 40}, "does not exist"),
    ],
)
def test_rollback_refused_is_409(
    api: Any, versions: Any, promoted: list[int], body: dict[str, Any], words: str
) -> None:
    for n in promoted:
        api.promote("greeting", n)
    before = history(api)
    r = api.post(f"{BASE}/rollback", json=body)
    assert r.status_code == 409
    assert r.json["code"] == "conflict" and words in r.json["message"]
    assert "current_production_version" not in r.json
    assert history(api) == before


def test_rollback_to_a_deleted_version_is_409(api: Any, versions: Any) -> None:
    for n in (1, 2, 3):
        api.promote("greeting", n)
    assert api.delete(f"{BASE}/versions/2").status_code == 204
    r = api.post(f"{BASE}/rollback")
    assert r.status_code == 409 and "has been deleted" in r.json["message"]
    assert production(api) == 3


@pytest.mark.parametrize(("expected", "current"), [(1, 2), (None, 2)])
def test_rollback_guard_that_fails(
    api: Any, versions: Any, expected: int | None, current: int
) -> None:
    api.promote("greeting", 1)
    api.promote("greeting", 2)
    r = api.post(f"{BASE}/rollback", json={"expected_production_version": expected})
    assert_conflict(r, current)
    assert production(api) == 2 and len(history(api)) == 2


def test_rollback_needs_write(api: Any, versions: Any) -> None:
    api.promote("greeting", 1)
    api.promote("greeting", 2)
    r = api.post(f"{BASE}/rollback", role=SERVICE_READ)
    assert r.status_code == 403 and r.json["code"] == "forbidden"
    assert production(api) == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"to_version": "1"}, "to_version"),
        ({"to_version": 0}, "to_version"),
        ({"notes": "x" * 2001}, "notes"),
        ({"notes": 5}, "notes"),
        ({"expected_production_version": "2"}, "expected_production_version"),
        ({"version": 1}, "version"),
    ],
)
def test_rollback_bad_body_is_400(
    api: Any, versions: Any, body: dict[str, Any], field: str
) -> None:
    r = api.post(f"{BASE}/rollback", json=body)
    assert r.status_code == 400 and field in r.json["errors"]


def test_rollback_body_must_be_json_and_prompt_must_exist(api: Any, versions: Any) -> None:
    r = api.post(f"{BASE}/rollback", data="to_version=1", content_type="text/plain")
    assert r.status_code == 415
    r = api.post("/api/v1/prompts/nope/rollback")
    assert r.status_code == 404 and "'nope'" in r.json["message"]


# --------------------------------------------------------------------------- diff


def diff(api: Any, old: str, new: str, **kw: Any) -> Any:
    return api.get(f"{BASE}/diff", query_string={"from": old, "to": new}, **kw)


def test_diff_of_text_versions(api: Any) -> None:
    api.create_prompt("greeting")
    v1 = api.create_version(
        content="Hi {{name}}\nWelcome to {{place}}.\n",
        body={"metadata": {"model": "a", "t": 0.2, "old": 1}, "tags": ["x", "y"]},
    )
    v2 = api.create_version(
        content="Hello {{name}}\nWelcome to {{ city }}.\n",
        body={"metadata": {"model": "b", "t": 0.2, "new": [1]}, "tags": ["y", "z"]},
    )
    api.promote("greeting", 1)
    r = diff(api, "production", v2["version_id"], role=SERVICE_READ)
    assert r.status_code == 200
    assert r.json == {
        "from": {"version": 1, "version_id": v1["version_id"], "status": "published"},
        "to": {"version": 2, "version_id": v2["version_id"], "status": "draft"},
        "content_diff": (
            "--- v1\n+++ v2\n@@ -1,2 +1,2 @@\n"
            "-Hi {{name}}\n-Welcome to {{place}}.\n+Hello {{name}}\n+Welcome to {{ city }}.\n"
        ),
        "variables": {"added": ["city"], "removed": ["place"]},
        "metadata": {
            "added": {"new": [1]},
            "removed": {"old": 1},
            "changed": {"model": {"from": "a", "to": "b"}},
        },
        "tags": {"added": ["z"], "removed": ["x"]},
        # Neither declares a contract: the implied ones are compared.
        "variables_schema": {
            "added": {"city": {"type": "string", "required": True}},
            "removed": {"place": {"type": "string", "required": True}},
            "changed": {},
        },
        "config": {"changed": []},
        "breaking": [
            {
                "variable": "city",
                "change": "newly_required",
                "detail": "required by version 2 but absent in version 1",
            }
        ],
    }
    # The other way round: everything mirrored.
    back = diff(api, "latest", "1").json
    assert back["from"]["version"] == 2 and back["to"]["version"] == 1
    assert back["variables"] == {"added": ["place"], "removed": ["city"]}
    assert back["metadata"]["changed"] == {"model": {"from": "b", "to": "a"}}


def test_diff_of_a_version_with_itself_is_empty(api: Any, versions: Any) -> None:
    r = diff(api, "2", versions[1]["version_id"])
    assert r.status_code == 200
    assert r.json["content_diff"] == ""
    assert r.json["variables"] == r.json["tags"] == {"added": [], "removed": []}
    assert r.json["metadata"] == {"added": {}, "removed": {}, "changed": {}}


def test_diff_of_chat_versions(api: Any) -> None:
    api.create_prompt("support", prompt_type="chat")
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "{{q}}"}]
    second = [
        {"role": "system", "content": "Be brief.\nCite {{source}}."},
        {"role": "user", "content": "{{q}}"},
    ]
    for messages in (first, second):
        api.create_version("support", content=json.dumps(messages))
    r = api.get("/api/v1/prompts/support/diff?from=1&to=latest")
    assert r.status_code == 200
    assert r.json["content_diff"] == (
        "--- v1\n+++ v2\n@@ -1,5 +1,6 @@\n"  # 3 lines of context: the last blank is left out
        " [system]\n Be brief.\n+Cite {{source}}.\n \n [user]\n {{q}}\n"
    )
    assert r.json["variables"] == {"added": ["source"], "removed": []}


@pytest.mark.parametrize(
    ("query", "missing"),
    [
        ("from=1&to=9", "version '9' of prompt 'greeting'"),
        ("from=v_nope&to=1", "version 'v_nope' of prompt 'greeting'"),
        ("from=1&to=newest", "version 'newest' of prompt 'greeting'"),
        ("from=production&to=1", "prompt 'greeting' has no production version"),
    ],
)
def test_diff_of_a_missing_version_is_404(
    api: Any, versions: Any, query: str, missing: str
) -> None:
    r = api.get(f"{BASE}/diff?{query}")
    assert r.status_code == 404 and r.json["code"] == "not_found"
    assert missing in r.json["message"]


def test_diff_of_a_missing_prompt_or_empty_one_is_404(api: Any) -> None:
    r = api.get("/api/v1/prompts/nope/diff?from=1&to=2")
    assert r.status_code == 404 and "prompt 'nope'" in r.json["message"]
    api.create_prompt("greeting")
    r = api.get(f"{BASE}/diff?from=latest&to=latest")
    assert r.status_code == 404 and "latest" in r.json["message"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("to=1", "from"),
        ("from=1", "to"),
        ("", "from"),
        ("from=&to=1", "from"),
        ("from=1&to=", "to"),
    ],
)
def test_diff_without_both_refs_is_400(api: Any, query: str, field: str) -> None:
    # 400 before 404: the prompt does not even exist.
    r = api.get(f"/api/v1/prompts/nope/diff?{query}", role=SERVICE_READ)
    assert r.status_code == 400
    assert r.json["code"] == r.json["error"] == "bad_request"
    assert field in r.json["errors"]


# --------------------------------------------------------------------------- openapi


def test_openapi_documents_releases(api: Any) -> None:
    spec = api.client.get("/openapi.json").json
    schemas = spec["components"]["schemas"]
    promote = spec["paths"]["/api/v1/prompts/{name}/versions/{versionId}/promote"]["post"]
    guard = schemas["Promote"]["properties"]["expected_production_version"]
    assert guard["type"] == "integer" and guard["nullable"] is True
    assert "409" in promote["responses"]

    rollback = spec["paths"]["/api/v1/prompts/{name}/rollback"]["post"]
    assert rollback["summary"] == "Roll production (or another environment) back"
    assert "Service Write" in rollback["description"]
    assert set(rollback["responses"]) >= {"200", "401", "403", "404", "409", "415"}
    assert set(schemas["Rollback"]["properties"]) == {
        "notes", "to_version", "expected_production_version", "expected_version", "environment",
    }  # fmt: skip
    ok = rollback["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/PromotionResult"}

    get = spec["paths"]["/api/v1/prompts/{name}/diff"]["get"]
    assert "Service Read" in get["description"]
    params = {p["name"]: p for p in get["parameters"] if p["in"] == "query"}
    assert params["from"]["required"] is True and params["to"]["required"] is True
    assert set(get["responses"]) >= {"200", "400", "401", "403", "404"}
    body = get["responses"]["200"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/Diff"}
    assert set(schemas["Diff"]["properties"]) == {
        "from", "to", "content_diff", "variables", "metadata", "tags", "variables_schema",
        "config", "breaking",
    }  # fmt: skip
