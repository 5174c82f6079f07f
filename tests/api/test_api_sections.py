"""Conditional sections through the API on every backend, PostgreSQL included
(docs/api.md section 4.6): a version lists its section variables and implies them optional booleans,
a declared schema must make them booleans, broken tags are 400 naming the tag, its line
and column, and section 19's check covers section variables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE
from storage import Storage
from storage.memory import MemoryStorage
from tests.sql_support import sql_storage

VERSIONS = "/api/v1/prompts/greeting/versions"
CONTENT = "Hi {{name}}.\n{{#formal}}\nDear {{title}},\n{{/formal}}\n{{^formal}}\nHey!\n{{/formal}}"


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """Every backend: version creation runs each one's own validation step."""
    if request.param == "memory":
        yield MemoryStorage()
        return
    if request.param in ("sqlite", "postgres"):
        sql_backend = sql_storage(request.param, request)
        yield sql_backend
        sql_backend.close()
        return
    from storage.redis import RedisStorage

    redis_backend = RedisStorage.from_url(request.getfixturevalue("redis_url"))
    yield redis_backend
    redis_backend.close()


def create(api: Any, content: str = CONTENT, **body: Any) -> Any:
    return api.post(VERSIONS, json={"content": content, **body}, role=SERVICE_WRITE)


def bad_request(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.json
    body: dict[str, Any] = response.json
    assert body["code"] == "bad_request"
    return body


@pytest.fixture
def prompt(api: Any) -> Any:
    api.create_prompt("greeting")
    return api


def test_a_version_lists_its_sections_and_implies_them_optional_booleans(prompt: Any) -> None:
    made = create(prompt)
    assert made.status_code == 201, made.json
    assert made.json["variables"] == ["name", "formal", "title"]
    assert made.json["variables_schema"] == {
        "name": {"type": "string", "required": True},
        "formal": {"type": "boolean", "required": False, "default": False},
        "title": {"type": "string", "required": True},
    }
    prompt.promote("greeting", 1)
    read = prompt.get("/api/v1/prompts/greeting/production", role=SERVICE_READ)
    assert read.json["variables_schema"] == made.json["variables_schema"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("Hi\n  {{#formal}}x", "section {{#formal}} at line 2, column 3 is never closed"),
        ("Hi\n\n{{/formal}}", "closing tag {{/formal}} at line 3, column 1 has no open section"),
        ("{{#a}}{{^b}}{{/a}}{{/b}}", "{{/a}} at line 1, column 13 crosses section {{^b}}"),
        ("{{#a}}{{#b}}{{#c}}{{#d}}{{#e}}{{/e}}{{/d}}{{/c}}{{/b}}{{/a}}", "nested 5 deep"),
        ("{{#a}}{{a}}{{/a}}", "used both as a section and as a placeholder: 'a'"),
    ],
)
def test_a_broken_section_is_400_naming_the_tag(prompt: Any, content: str, says: str) -> None:
    assert says in bad_request(create(prompt, content))["message"]
    assert prompt.get(VERSIONS).json["items"] == []


def test_a_broken_section_in_an_edit_is_400_and_changes_nothing(prompt: Any) -> None:
    assert create(prompt).status_code == 201
    edited = prompt.patch(f"{VERSIONS}/1", json={"content": "x\n{{^formal}}"})
    assert "section {{^formal}} at line 2, column 1" in bad_request(edited)["message"]
    assert prompt.get(f"{VERSIONS}/1").json["content"] == CONTENT


def test_a_declared_schema_must_make_a_section_variable_a_boolean(prompt: Any) -> None:
    schema = {"name": {"type": "string"}, "title": {"type": "string"}}
    wrong = create(prompt, variables_schema={**schema, "formal": {"type": "string"}})
    says = " ".join(bad_request(wrong)["errors"]["variables_schema.formal"])
    assert "'formal' is a section" in says and "must be boolean" in says
    declared = {**schema, "formal": {"type": "boolean"}}
    made = create(prompt, variables_schema=declared)
    assert made.status_code == 201, made.json
    assert made.json["variables_schema"]["formal"] == {"type": "boolean"}


def test_examples_hold_a_section_variable_to_a_strict_boolean(prompt: Any) -> None:
    for value in ("true", 1):
        example = {"variables": {"name": "A", "title": "Dr", "formal": value}}
        says = bad_request(create(prompt, examples=[example]))["errors"]["examples[0]"]
        assert "'formal': expected boolean" in " ".join(says)
    fine = {"variables": {"name": "A", "title": "Dr", "formal": True}}
    assert create(prompt, examples=[fine]).status_code == 201


def promote(api: Any, version: int) -> Any:
    return api.post(f"{VERSIONS}/{version}/promote", json={}, role=SERVICE_WRITE)


def test_a_section_variable_made_required_breaks_a_promotion(prompt: Any) -> None:
    assert create(prompt).status_code == 201
    prompt.promote("greeting", 1)
    declared = {
        "name": {"type": "string"},
        "title": {"type": "string"},
        "formal": {"type": "boolean"},
    }
    assert create(prompt, variables_schema=declared).status_code == 201
    refused = promote(prompt, 2)
    assert refused.status_code == 409, refused.json
    assert refused.json["reason"] == "breaking_change"
    changes = [(c["variable"], c["change"]) for c in refused.json["changes"]]
    assert changes == [("formal", "newly_required")]


def test_a_placeholder_becoming_a_section_breaks_a_promotion(prompt: Any) -> None:
    assert create(prompt, "Hi {{formal}}").status_code == 201
    prompt.promote("greeting", 1)
    assert create(prompt, "Hi{{#formal}}!{{/formal}}").status_code == 201
    diff = prompt.get(
        "/api/v1/prompts/greeting/diff?from=production&to=latest", role=SERVICE_READ
    ).json
    assert diff["variables_schema"]["changed"] == {
        "formal": {
            "from": {"type": "string", "required": True},
            "to": {"type": "boolean", "required": False, "default": False},
        }
    }
    assert [(c["variable"], c["change"]) for c in diff["breaking"]] == [("formal", "type_changed")]
    refused = promote(prompt, 2)
    assert refused.status_code == 409, refused.json
    changes = [(c["variable"], c["change"]) for c in refused.json["changes"]]
    assert changes == [("formal", "type_changed")]
    # An optional boolean that stays one breaks nothing.
    assert create(prompt, "Hey{{^formal}}!{{/formal}}").status_code == 201
    prompt.post(
        f"{VERSIONS}/2/promote",
        json={"allow_breaking": True, "notes": "formal is a switch now"},
        role=SERVICE_WRITE,
    )
    assert promote(prompt, 3).status_code == 200
