"""Version management: create, list, edit, promote, archive, unarchive, delete."""

from __future__ import annotations

import json
from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE

BASE = "/api/v1/prompts/greeting/versions"


@pytest.fixture
def prompt(api: Any) -> dict[str, Any]:
    return api.create_prompt("greeting")


def status_of(api: Any, version: int) -> str:
    status: str = api.get(f"{BASE}/{version}").json["status"]
    return status


# --------------------------------------------------------------------------- create


def test_create_version_is_a_draft_with_the_next_number(api: Any, prompt: Any) -> None:
    r = api.post(
        BASE,
        role=SERVICE_WRITE,
        json={"content": "Hi {{name}} {{ day }}", "metadata": {"a": 1}, "tags": ["x", "y"]},
    )
    assert r.status_code == 201
    body = r.json
    assert body["version"] == 1
    assert body["status"] == "draft"
    assert body["is_production"] is False
    assert body["variables"] == ["name", "day"]
    assert body["metadata"] == {"a": 1}
    assert body["tags"] == ["x", "y"]
    assert body["prompt_id"] == prompt["prompt_id"]
    assert body["promoted_at"] is None
    assert "created_by" not in body
    assert api.create_version()["version"] == 2


def test_create_version_defaults(api: Any, prompt: Any) -> None:
    body = api.create_version(content="no placeholders")
    assert body["metadata"] == {}
    assert body["tags"] == []
    assert body["variables"] == []


def test_numbers_are_never_reused(api: Any, prompt: Any) -> None:
    api.create_version()
    v2 = api.create_version()
    assert api.delete(f"{BASE}/{v2['version_id']}").status_code == 204
    assert api.create_version()["version"] == 3


def test_create_version_on_missing_prompt_is_404(api: Any) -> None:
    r = api.post("/api/v1/prompts/nope/versions", json={"content": "x"})
    assert r.status_code == 404
    assert "nope" in r.json["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": " \n\t "}, "content"),  # whitespace alone is empty too
        ({"content": 5}, "content"),
        ({"content": "x" * (256 * 1024 + 1)}, "content"),
        ({"content": "é" * (128 * 1024 + 1)}, "content"),  # 256 KiB counted in UTF-8 bytes
        ({"content": "x", "metadata": []}, "metadata"),
        ({"content": "x", "metadata": "a=b"}, "metadata"),
        ({"content": "x", "metadata": {"big": "x" * (16 * 1024)}}, "metadata"),
        ({"content": "x", "tags": "prod"}, "tags"),
        ({"content": "x", "tags": [""]}, "tags"),
        ({"content": "x", "tags": ["t" * 65]}, "tags"),
        ({"content": "x", "tags": [1]}, "tags"),
        ({"content": "x", "tags": [f"t{i}" for i in range(33)]}, "tags"),
        ({"content": "x", "created_by": "me"}, "created_by"),
    ],
)
def test_create_version_validation(api: Any, prompt: Any, body: dict[str, Any], field: str) -> None:
    r = api.post(BASE, json=body)
    assert r.status_code == 400, r.json
    assert r.json["code"] == r.json["error"] == "bad_request"
    assert field in r.json["errors"]


def test_limits_at_the_edges_are_accepted(api: Any, prompt: Any) -> None:
    meta = {"k": "x" * (16 * 1024 - len('{"k":""}'))}
    assert len(json.dumps(meta, separators=(",", ":"))) == 16 * 1024
    body = {"content": "x" * (256 * 1024), "metadata": meta, "tags": ["t" * 64] * 32}
    r = api.post(BASE, json=body)
    assert r.status_code == 201, r.json
    assert len(r.json["content"]) == 256 * 1024


def test_chat_content_must_be_a_message_list(api: Any) -> None:
    api.create_prompt("chat", prompt_type="chat")
    for bad in ("plain text", "[]", '[{"role": "user"}]', '{"role": "user", "content": "x"}'):
        r = api.post("/api/v1/prompts/chat/versions", json={"content": bad})
        assert r.status_code == 400, bad
        assert r.json["code"] == "bad_request"
    good = json.dumps([{"role": "user", "content": "{{q}}"}])
    created = api.post("/api/v1/prompts/chat/versions", json={"content": good})
    assert created.status_code == 201
    # A refused version takes no number, and its variables come from every message.
    assert created.json["version"] == 1 and created.json["variables"] == ["q"]


def test_chat_edits_must_be_a_message_list(api: Any) -> None:
    api.create_prompt("chat", prompt_type="chat")
    original = json.dumps([{"role": "user", "content": "{{q}}"}])
    api.create_version("chat", content=original)
    r = api.patch("/api/v1/prompts/chat/versions/1", json={"content": "not json"})
    assert r.status_code == 400 and r.json["code"] == "bad_request"
    assert "chat" in r.json["message"]
    assert api.get("/api/v1/prompts/chat/versions/1").json["content"] == original
    edited = json.dumps([{"role": "system", "content": "{{ r }} {{q}}"}])
    r = api.patch("/api/v1/prompts/chat/versions/1", json={"content": edited})
    assert r.status_code == 200 and r.json["variables"] == ["r", "q"]
    # A version that is not a draft is refused for that first, whatever the content.
    api.promote("chat", 1)
    r = api.patch("/api/v1/prompts/chat/versions/1", json={"content": "not json"})
    assert r.status_code == 409


# --------------------------------------------------------------------------- list


def test_list_versions_newest_first_with_status_filter(api: Any, prompt: Any) -> None:
    for _ in range(5):
        api.create_version()
    api.promote("greeting", 2)
    api.post(f"{BASE}/3/archive")
    r = api.get(BASE, role=SERVICE_READ)
    assert r.status_code == 200
    assert [v["version"] for v in r.json["items"]] == [5, 4, 3, 2, 1]
    assert r.json["next_cursor"] is None
    assert "created_by" not in r.json["items"][0]
    drafts = api.get(f"{BASE}?status=draft").json["items"]
    assert [v["version"] for v in drafts] == [5, 4, 1]
    assert [v["version"] for v in api.get(f"{BASE}?status=published").json["items"]] == [2]
    assert [v["version"] for v in api.get(f"{BASE}?status=archived").json["items"]] == [3]


def test_list_versions_paginates(api: Any, prompt: Any) -> None:
    for _ in range(5):
        api.create_version()
    first = api.get(f"{BASE}?limit=2").json
    assert [v["version"] for v in first["items"]] == [5, 4]
    second = api.get(f"{BASE}?limit=2&cursor={first['next_cursor']}").json
    assert [v["version"] for v in second["items"]] == [3, 2]
    third = api.get(f"{BASE}?limit=2&cursor={second['next_cursor']}").json
    assert [v["version"] for v in third["items"]] == [1]
    assert third["next_cursor"] is None


@pytest.mark.parametrize("query", ["status=live", "limit=0", "limit=x", "cursor=%%%"])
def test_list_versions_bad_query_is_400(api: Any, prompt: Any, query: str) -> None:
    r = api.get(f"{BASE}?{query}")
    assert r.status_code == 400
    assert r.json["code"] == "bad_request"


def test_list_versions_of_missing_prompt_is_404(api: Any) -> None:
    assert api.get("/api/v1/prompts/nope/versions").status_code == 404


# --------------------------------------------------------------------------- edit


def test_edit_draft_content(api: Any, prompt: Any) -> None:
    v = api.create_version(content="Hi {{a}}")
    r = api.patch(f"{BASE}/{v['version_id']}", role=SERVICE_WRITE, json={"content": "Yo {{b}}"})
    assert r.status_code == 200
    assert r.json["content"] == "Yo {{b}}"
    assert r.json["variables"] == ["b"]
    assert r.json["version"] == v["version"]
    assert r.json["updated_at"] >= v["updated_at"]
    assert r.json["created_at"] == v["created_at"]
    assert api.get(f"{BASE}/1").json["content"] == "Yo {{b}}"


@pytest.mark.parametrize("state", ["published", "archived"])
def test_edit_non_draft_is_409(api: Any, prompt: Any, state: str) -> None:
    v = api.create_version()
    if state == "published":
        api.promote("greeting", 1)
    else:
        api.post(f"{BASE}/1/archive")
    r = api.patch(f"{BASE}/{v['version_id']}", json={"content": "new"})
    assert r.status_code == 409
    assert r.json["code"] == r.json["error"] == "conflict"
    assert api.get(f"{BASE}/1").json["content"] == v["content"]


def test_edit_validation_and_missing(api: Any, prompt: Any) -> None:
    api.create_version()
    assert api.patch(f"{BASE}/1", json={}).status_code == 400
    assert api.patch(f"{BASE}/1", json={"content": ""}).status_code == 400
    blank = api.patch(f"{BASE}/1", json={"content": "  \n "})
    assert blank.status_code == 400 and blank.json["errors"]["content"] == ["must not be empty"]
    assert api.patch(f"{BASE}/1", json={"content": "x", "tags": []}).status_code == 400
    assert api.patch(f"{BASE}/9", json={"content": "x"}).status_code == 404
    assert api.patch("/api/v1/prompts/nope/versions/1", json={"content": "x"}).status_code == 404


# --------------------------------------------------------------------------- promote


def test_promote_without_body(api: Any, prompt: Any) -> None:
    v = api.create_version()
    r = api.post(f"{BASE}/{v['version_id']}/promote", role=SERVICE_WRITE)
    assert r.status_code == 200
    assert set(r.json) == {"version", "promotion"}
    version, promotion = r.json["version"], r.json["promotion"]
    assert version["status"] == "published"
    assert version["is_production"] is True
    assert version["promoted_at"] == promotion["promoted_at"]
    user_id = api.tokens.user_ids[("acme", SERVICE_WRITE)]
    assert version["promoted_by"] == promotion["promoted_by"] == user_id
    assert promotion["version_number"] == 1
    assert promotion["previous_version"] is None
    assert promotion["notes"] is None
    assert promotion["prompt_id"] == prompt["prompt_id"]
    assert promotion["history_id"]
    assert api.get("/api/v1/prompts/greeting/production").json["version_id"] == v["version_id"]


def test_promote_archives_previous_by_default(api: Any, prompt: Any) -> None:
    api.create_version()
    api.create_version()
    api.promote("greeting", 1)
    r = api.post(f"{BASE}/2/promote", json={"notes": "better wording"})
    assert r.json["promotion"]["previous_version"] == 1
    assert r.json["promotion"]["notes"] == "better wording"
    assert status_of(api, 1) == "archived"
    assert status_of(api, 2) == "published"
    assert api.get(f"{BASE}?status=published").json["items"][0]["version"] == 2


def test_promote_can_put_previous_back_to_draft(api: Any, prompt: Any) -> None:
    api.create_version()
    api.create_version()
    api.promote("greeting", 1)
    r = api.post(f"{BASE}/2/promote", json={"archive_previous_production": False})
    assert r.status_code == 200
    assert status_of(api, 1) == "draft"


def test_promote_accepts_an_empty_json_body(api: Any, prompt: Any) -> None:
    api.create_version()
    r = api.post(f"{BASE}/1/promote", data="", content_type="application/json")
    assert r.status_code == 200
    api.create_version()
    assert api.post(f"{BASE}/2/promote", json={}).status_code == 200


@pytest.mark.parametrize("state", ["published", "archived"])
def test_promote_non_draft_is_409(api: Any, prompt: Any, state: str) -> None:
    api.create_version()
    if state == "published":
        api.promote("greeting", 1)
    else:
        api.post(f"{BASE}/1/archive")
    r = api.post(f"{BASE}/1/promote")
    assert r.status_code == 409
    assert r.json["code"] == "conflict"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"notes": "n" * 2001}, "notes"),
        ({"notes": 5}, "notes"),
        ({"archive_previous_production": "maybe"}, "archive_previous_production"),
        ({"force": True}, "force"),
    ],
)
def test_promote_validation(api: Any, prompt: Any, body: dict[str, Any], field: str) -> None:
    api.create_version()
    r = api.post(f"{BASE}/1/promote", json=body)
    assert r.status_code == 400
    assert field in r.json["errors"]
    assert status_of(api, 1) == "draft"


def test_promote_notes_at_the_limit(api: Any, prompt: Any) -> None:
    api.create_version()
    assert api.post(f"{BASE}/1/promote", json={"notes": "n" * 2000}).status_code == 200


def test_promote_missing_is_404(api: Any, prompt: Any) -> None:
    assert api.post(f"{BASE}/1/promote").status_code == 404
    assert api.post("/api/v1/prompts/nope/versions/1/promote").status_code == 404


# --------------------------------------------------------------------------- archive


def test_archive_and_unarchive(api: Any, prompt: Any) -> None:
    v = api.create_version()
    r = api.post(f"{BASE}/{v['version_id']}/archive", role=SERVICE_WRITE)
    assert r.status_code == 200
    assert r.json["status"] == "archived"
    assert r.json["updated_at"] >= v["updated_at"]
    r = api.post(f"{BASE}/1/unarchive", role=SERVICE_WRITE)
    assert r.status_code == 200
    assert r.json["status"] == "draft"
    assert r.json["is_production"] is False


def test_archive_published_is_409(api: Any, prompt: Any) -> None:
    api.create_version()
    api.promote("greeting", 1)
    r = api.post(f"{BASE}/1/archive")
    assert r.status_code == 409
    assert "promote" in r.json["message"]
    assert status_of(api, 1) == "published"


def test_archive_archived_is_409(api: Any, prompt: Any) -> None:
    api.create_version()
    api.post(f"{BASE}/1/archive")
    assert api.post(f"{BASE}/1/archive").status_code == 409


@pytest.mark.parametrize("state", ["draft", "published"])
def test_unarchive_non_archived_is_409(api: Any, prompt: Any, state: str) -> None:
    api.create_version()
    if state == "published":
        api.promote("greeting", 1)
    r = api.post(f"{BASE}/1/unarchive")
    assert r.status_code == 409
    assert r.json["code"] == "conflict"


def test_archive_missing_is_404(api: Any, prompt: Any) -> None:
    assert api.post(f"{BASE}/v_nope/archive").status_code == 404
    assert api.post(f"{BASE}/v_nope/unarchive").status_code == 404


def test_archive_takes_no_fields(api: Any, prompt: Any) -> None:
    api.create_version()
    assert api.post(f"{BASE}/1/archive", json={"x": 1}).status_code == 400
    assert api.post(f"{BASE}/1/archive", json={}).status_code == 200
    assert api.post(f"{BASE}/1/unarchive", json={}).status_code == 200


# --------------------------------------------------------------------------- delete


@pytest.mark.parametrize("state", ["draft", "archived"])
def test_delete_version(api: Any, prompt: Any, state: str) -> None:
    v = api.create_version()
    if state == "archived":
        api.post(f"{BASE}/1/archive")
    r = api.delete(f"{BASE}/{v['version_id']}", role=SERVICE_WRITE)
    assert r.status_code == 204
    assert r.data == b""
    assert api.get(f"{BASE}/1").status_code == 404
    assert api.delete(f"{BASE}/1").status_code == 404


def test_delete_published_is_409(api: Any, prompt: Any) -> None:
    api.create_version()
    api.promote("greeting", 1)
    r = api.delete(f"{BASE}/1")
    assert r.status_code == 409
    assert status_of(api, 1) == "published"


def test_latest_moves_down_when_the_newest_is_deleted(api: Any, prompt: Any) -> None:
    api.create_version()
    api.create_version()
    api.delete(f"{BASE}/2")
    assert api.get("/api/v1/prompts/greeting/latest").json["version"] == 1
    assert api.get("/api/v1/prompts/greeting").json["latest_version"] == 1
