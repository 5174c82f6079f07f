"""Prompt management: POST/GET /prompts, GET/DELETE /prompts/{name}."""

from __future__ import annotations

from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE

PROMPT_FIELDS = {
    "prompt_id",
    "name",
    "prompt_type",
    "description",
    "created_at",
    "updated_at",
    "latest_version",
    "production_version",
}


def test_create_prompt(api: Any) -> None:
    r = api.post(
        "/api/v1/prompts",
        role=SERVICE_WRITE,
        json={"name": "greeting", "prompt_type": "chat", "description": "Welcome"},
    )
    assert r.status_code == 201
    assert set(r.json) == PROMPT_FIELDS
    assert r.json["prompt_id"].startswith("pmt_")
    assert r.json["name"] == "greeting"
    assert r.json["prompt_type"] == "chat"
    assert r.json["description"] == "Welcome"
    assert r.json["latest_version"] is None
    assert r.json["production_version"] is None
    assert r.json["created_at"].endswith("Z")


def test_create_prompt_defaults_to_text(api: Any) -> None:
    body = api.create_prompt("plain")
    assert body["prompt_type"] == "text"
    assert body["description"] is None


def test_create_prompt_twice_is_409(api: Any) -> None:
    api.create_prompt("greeting")
    r = api.post("/api/v1/prompts", json={"name": "greeting"})
    assert r.status_code == 409
    assert r.json["code"] == r.json["error"] == "conflict"
    assert "greeting" in r.json["message"]


def test_same_name_in_two_orgs_is_fine(api: Any) -> None:
    api.create_prompt("greeting")
    assert api.post("/api/v1/prompts", json={"name": "greeting"}, org="other").status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "-starts-with-dash"}, "name"),
        ({"name": ".dot"}, "name"),
        ({"name": "has space"}, "name"),
        ({"name": "slash/inside"}, "name"),
        ({"name": "x" * 129}, "name"),
        ({"name": "pmt_looks_like_an_id"}, "name"),
        ({"name": "trailing-newline\n"}, "name"),
        ({"name": "a\x00b"}, "name"),
        ({"name": "\uff54\uff41\uff52"}, "name"),  # full-width letters
        ({"name": 12}, "name"),
        ({"name": "ok", "prompt_type": "image"}, "prompt_type"),
        ({"name": "ok", "description": "d" * 2001}, "description"),
        ({"name": "ok", "unknown": 1}, "unknown"),
    ],
)
def test_create_prompt_validation(api: Any, body: dict[str, Any], field: str) -> None:
    r = api.post("/api/v1/prompts", json=body)
    assert r.status_code == 400
    assert r.json["code"] == r.json["error"] == "bad_request"
    assert field in r.json["errors"]
    assert all(isinstance(m, str) for m in r.json["errors"][field])


@pytest.mark.parametrize("name", ["a", "A.b_c-d", "9lives", "x" * 128, "pmt-not-prefix"])
def test_valid_names(api: Any, name: str) -> None:
    assert api.post("/api/v1/prompts", json={"name": name}).status_code == 201
    assert api.get(f"/api/v1/prompts/{name}").json["name"] == name


def test_body_must_be_an_object(api: Any) -> None:
    for raw in ("[]", '"greeting"', "null", "3"):
        r = api.post("/api/v1/prompts", data=raw, content_type="application/json")
        assert r.status_code == 400, raw
        assert r.json["code"] == "bad_request"


def test_get_prompt_by_name_and_id(api: Any) -> None:
    created = api.create_prompt("greeting")
    api.create_version()
    v2 = api.create_version()
    api.promote("greeting", v2["version_id"])
    for ref in ("greeting", created["prompt_id"]):
        r = api.get(f"/api/v1/prompts/{ref}", role=SERVICE_READ)
        assert r.status_code == 200
        assert set(r.json) == PROMPT_FIELDS
        assert r.json["prompt_id"] == created["prompt_id"]
        assert r.json["latest_version"] == 2
        assert r.json["production_version"] == 2


def test_get_missing_prompt_is_404(api: Any) -> None:
    r = api.get("/api/v1/prompts/nope")
    assert r.status_code == 404
    assert "nope" in r.json["message"]


def test_list_prompts_paginates_in_name_order(api: Any) -> None:
    names = [f"p{i:02d}" for i in range(7)]
    for name in reversed(names):
        api.create_prompt(name)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = "?limit=3" + (f"&cursor={cursor}" if cursor else "")
        r = api.get("/api/v1/prompts" + query, role=SERVICE_READ)
        assert r.status_code == 200
        assert set(r.json) == {"items", "next_cursor"}
        seen += [p["name"] for p in r.json["items"]]
        pages += 1
        cursor = r.json["next_cursor"]
        if cursor is None:
            break
    assert seen == names
    assert pages == 3


def test_list_prompts_default_limit_is_50(api: Any, backend: Any) -> None:
    for i in range(51):
        backend.create_prompt("acme", f"p{i:03d}")
    r = api.get("/api/v1/prompts")
    assert len(r.json["items"]) == 50
    assert r.json["next_cursor"]


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=abc", "limit=1.5", "limit="])
def test_list_limit_out_of_range_is_400(api: Any, query: str) -> None:
    r = api.get("/api/v1/prompts?" + query)
    assert r.status_code == 400
    assert "limit" in r.json["errors"]


def test_list_bad_cursor_is_400(api: Any) -> None:
    r = api.get("/api/v1/prompts?cursor=***")
    assert r.status_code == 400
    assert r.json["code"] == "bad_request"


def test_limits_at_the_edges_are_fine(api: Any) -> None:
    assert api.get("/api/v1/prompts?limit=1").status_code == 200
    assert api.get("/api/v1/prompts?limit=200").status_code == 200


def test_delete_prompt_removes_versions_and_history(api: Any) -> None:
    api.create_prompt("greeting")
    v = api.create_version()
    api.promote("greeting", v["version_id"])
    r = api.delete("/api/v1/prompts/greeting", role=SERVICE_WRITE)
    assert r.status_code == 204
    assert r.data == b""
    for path in ("", "/production", "/latest", "/history", "/versions"):
        assert api.get(f"/api/v1/prompts/greeting{path}").status_code == 404
    api.create_prompt("greeting")
    assert api.create_version()["version"] == 1


def test_delete_missing_prompt_is_404(api: Any) -> None:
    assert api.delete("/api/v1/prompts/nope").status_code == 404
