"""Model configuration through the API: a version carries ``config`` as given, every
read returns it, a PATCH of a draft replaces it (absent keeps it, null clears it), a
frozen version refuses it, a problem is 400 naming its path, the diff lists its changes
and the promotion check reports tools and response_format by ``field``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE

VERSIONS = "/api/v1/prompts/greeting/versions"
SEARCH: dict[str, Any] = {
    "name": "search",
    "description": "Search the docs",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
CONFIG: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "params": {"temperature": 0.2, "max_tokens": 300},
    "tools": [SEARCH],
    "response_format": {"type": "text"},
}


def create(api: Any, config: Any = None, **body: Any) -> Any:
    if config is not None:
        body["config"] = config
    return api.post(VERSIONS, json={"content": "Hi {{name}}", **body}, role=SERVICE_WRITE)


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.json
    body: dict[str, Any] = response.json
    assert body["code"] == code and body["message"]
    return body


@pytest.fixture
def prompt(api: Any) -> Any:
    """greeting v1 (CONFIG) in production."""
    api.create_prompt("greeting")
    assert create(api, CONFIG).status_code == 201
    api.promote("greeting", 1)
    return api


def test_a_version_carries_its_config(api: Any) -> None:
    api.create_prompt("greeting")
    made = create(api, CONFIG)
    assert made.status_code == 201, made.json
    assert made.json["config"] == CONFIG
    for url in (f"{VERSIONS}/1", "/api/v1/prompts/greeting/latest"):
        read = api.get(url, role=SERVICE_READ)
        assert read.status_code == 200 and read.json["config"] == CONFIG
    api.promote("greeting", 1)
    assert api.get("/api/v1/prompts/greeting/production").json["config"] == CONFIG
    assert api.get(VERSIONS, role=SERVICE_READ).json["items"][0]["config"] == CONFIG
    # None given: null; no keys are ever added.
    assert create(api).json["config"] is None
    assert create(api, {"model": "m"}).json["config"] == {"model": "m"}


def test_patch_replaces_keeps_and_clears_config(api: Any) -> None:
    api.create_prompt("greeting")
    create(api, CONFIG)
    url = f"{VERSIONS}/1"
    kept = api.patch(url, json={"content": "Hello {{name}}"}, role=SERVICE_WRITE)
    assert kept.status_code == 200 and kept.json["config"] == CONFIG
    other = {"model": "gpt-4o", "params": {"seed": 3}}
    edited = api.patch(url, json={"config": other}, role=SERVICE_WRITE)
    assert edited.status_code == 200 and edited.json["config"] == other
    assert edited.json["content"] == "Hello {{name}}"
    cleared = api.patch(url, json={"config": None}, role=SERVICE_WRITE)
    assert cleared.json["config"] is None
    assert api.get(url, role=SERVICE_READ).json["config"] is None


def test_a_frozen_version_config_is_409_frozen(prompt: Any) -> None:
    prompt.post("/api/v1/environments", json={"name": "staging"})
    create(prompt, CONFIG)
    promoted = prompt.post(f"{VERSIONS}/2/promote", json={"environment": "staging"})
    assert promoted.status_code == 200, promoted.json
    refused = error(prompt.patch(f"{VERSIONS}/2", json={"config": {"model": "x"}}), 409, "conflict")
    assert refused["reason"] == "frozen"
    assert prompt.get(f"{VERSIONS}/2").json["config"] == CONFIG
    error(prompt.patch(f"{VERSIONS}/1", json={"config": None}), 409, "conflict")


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"params": {"temperature": 3}}, "config.params.temperature"),
        ({"params": {"stop": "x"}}, "config.params.stop"),
        ({"tools": [{"name": "a b", "parameters": {"type": "object"}}]}, "config.tools[0].name"),
        ({"response_format": {"type": "json_schema"}}, "config.response_format.json_schema"),
        ({"unknown": 1}, "config"),
        ("gpt-4o", "config"),
        ({"model": "m" * 66_000}, "config"),
    ],
)
def test_bad_config_is_400_naming_the_path(api: Any, config: Any, where: str) -> None:
    api.create_prompt("greeting")
    body = error(create(api, config), 400, "bad_request")
    assert where in body["errors"], body
    assert where in body["message"]
    assert api.get(VERSIONS, role=SERVICE_READ).json["items"] == []
    create(api)
    patched = api.patch(f"{VERSIONS}/1", json={"config": config}, role=SERVICE_WRITE)
    assert where in error(patched, 400, "bad_request")["errors"]


def test_diff_lists_config_changes(prompt: Any) -> None:
    fetch = {"name": "fetch", "parameters": {"type": "object"}}
    new = {
        "model": "gpt-4o",
        "params": {"temperature": 0.7, "max_tokens": 300, "seed": 1},
        "tools": [copy.deepcopy(SEARCH), fetch],
        "response_format": {"type": "text"},
    }
    assert create(prompt, new).status_code == 201
    diff = prompt.get("/api/v1/prompts/greeting/diff?from=1&to=2", role=SERVICE_READ)
    assert diff.status_code == 200
    assert diff.json["config"] == {
        "changed": [
            {"path": "model", "from": "gpt-4o-mini", "to": "gpt-4o"},
            {"path": "params.temperature", "from": 0.2, "to": 0.7},
            {"path": "params.seed", "from": None, "to": 1},
            {"path": "tools.fetch", "from": None, "to": fetch},
        ]
    }
    assert diff.json["breaking"] == []
    same = prompt.get("/api/v1/prompts/greeting/diff?from=1&to=1", role=SERVICE_READ).json
    assert same["config"] == {"changed": []}


def test_breaking_config_is_409_by_field(prompt: Any) -> None:
    new = {**CONFIG, "tools": [], "response_format": {"type": "json_object"}}
    assert create(prompt, new).status_code == 201
    refused = error(prompt.post(f"{VERSIONS}/2/promote"), 409, "breaking_change")
    assert [(c["field"], c["change"]) for c in refused["changes"]] == [
        ("config.tools.search", "removed"),
        ("config.response_format", "changed"),
    ]
    assert all("variable" not in c and c["detail"] for c in refused["changes"])
    diff = prompt.get("/api/v1/prompts/greeting/diff?from=1&to=2").json
    assert [c["field"] for c in diff["breaking"]] == [
        "config.tools.search",
        "config.response_format",
    ]
    done = prompt.post(f"{VERSIONS}/2/promote", json={"allow_breaking": True, "notes": "JSON now"})
    assert done.status_code == 200 and done.json["promotion"]["breaking"] is True


def test_a_tools_parameters_changed_breaks(prompt: Any) -> None:
    tool = {**SEARCH, "parameters": {"type": "object", "required": ["q"]}}
    assert create(prompt, {**CONFIG, "tools": [tool]}).status_code == 201
    refused = error(prompt.post(f"{VERSIONS}/2/promote"), 409, "breaking_change")
    assert [(c["field"], c["change"]) for c in refused["changes"]] == [
        ("config.tools.search", "changed")
    ]
