"""Model configuration on every backend: a version's ``config`` stored as given,
returned by every read, replaced whole by an edit of a draft, refused on a frozen one,
refused when invalid (by path), carried by a backup, covered by a review's digest, and
checked by the promotion check (tools and response_format)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from storage import BreakingPromotion, ConfigInvalid, Storage, VersionFrozen
from storage.records import PromptVersion

ORG = "acme"
AUTHOR = "a0000000-0000-4000-8000-000000000001"
PROMOTER = "a0000000-0000-4000-8000-000000000002"

SEARCH: dict[str, Any] = {
    "name": "search",
    "description": "Search the docs",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
CONFIG: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "provider": "openai",
    "params": {"temperature": 0.2, "max_tokens": 300, "stop": ["\n\n"], "seed": 7},
    "tools": [SEARCH],
    "response_format": {"type": "text"},
}


def version(storage: Storage, config: dict[str, Any] | None, content: str = "Hi") -> PromptVersion:
    return storage.create_version(ORG, "greeting", content, AUTHOR, config=config)


def with_(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(base), **changes}


@pytest.fixture
def prompt(storage: Storage) -> Storage:
    storage.create_prompt(ORG, "greeting")
    return storage


def test_config_round_trips_through_every_read(prompt: Storage) -> None:
    created = version(prompt, CONFIG)
    assert created.config == CONFIG
    assert created.to_json()["config"] == CONFIG
    prompt.create_environment(ORG, "staging")
    prompt.promote(ORG, "greeting", "1", PROMOTER, environment="staging")
    reads = [
        prompt.get_version(ORG, "greeting", "1"),
        prompt.get_version(ORG, "greeting", created.version_id),
        prompt.get_latest(ORG, "greeting"),
        prompt.get_in_environment(ORG, "greeting", "staging"),
        prompt.list_versions(ORG, "greeting").items[0],
    ]
    for read in reads:
        assert read.config == CONFIG
    published = prompt.promote(ORG, "greeting", "1", PROMOTER).version
    assert published.config == CONFIG
    assert prompt.get_production(ORG, "greeting").to_json()["config"] == CONFIG


def test_config_is_returned_as_stored_without_keys_added(prompt: Storage) -> None:
    version(prompt, {"model": "m"})
    assert prompt.get_version(ORG, "greeting", "1").to_json()["config"] == {"model": "m"}
    version(prompt, {})
    assert prompt.get_version(ORG, "greeting", "2").config == {}
    version(prompt, None)
    assert prompt.get_version(ORG, "greeting", "3").to_json()["config"] is None


def test_stored_config_is_a_private_copy(prompt: Storage) -> None:
    config = copy.deepcopy(CONFIG)
    version(prompt, config)
    config["params"]["temperature"] = 1.5
    config["tools"].clear()
    stored = prompt.get_version(ORG, "greeting", "1")
    assert stored.config == CONFIG


def test_edit_replaces_the_config_whole(prompt: Storage) -> None:
    version(prompt, CONFIG)
    other = {"model": "gpt-4o", "params": {"temperature": 1}}
    edited = prompt.edit_version(ORG, "greeting", "1", "Hi", config=other)
    assert edited.config == other
    assert prompt.get_version(ORG, "greeting", "1").config == other
    # Given whole: storage has no "keep" (the API's PATCH keeps by sending it back).
    plain = prompt.edit_version(ORG, "greeting", "1", "Hi")
    assert plain.config is None
    assert prompt.get_latest(ORG, "greeting").config is None


def test_a_frozen_version_config_never_changes(prompt: Storage) -> None:
    version(prompt, CONFIG)
    prompt.create_environment(ORG, "staging")
    prompt.promote(ORG, "greeting", "1", PROMOTER, environment="staging")
    with pytest.raises(VersionFrozen):
        prompt.edit_version(ORG, "greeting", "1", "Hi", config={"model": "other"})
    assert prompt.get_version(ORG, "greeting", "1").config == CONFIG


@pytest.mark.parametrize(
    ("config", "where", "says"),
    [
        ({"params": {"temperature": 2.5}}, "config.params.temperature", "between 0 and 2"),
        ({"params": {"temperature": "hot"}}, "config.params.temperature", "a number"),
        ({"params": {"top_p": -0.1}}, "config.params.top_p", "between 0 and 1"),
        ({"params": {"max_tokens": 0}}, "config.params.max_tokens", "at least 1"),
        ({"params": {"max_tokens": 1.5}}, "config.params.max_tokens", "an integer"),
        ({"params": {"max_tokens": True}}, "config.params.max_tokens", "an integer"),
        ({"params": {"stop": ["a", "b", "c", "d", "e"]}}, "config.params.stop", "at most 4"),
        ({"params": {"presence_penalty": -3}}, "config.params.presence_penalty", "-2 and 2"),
        ({"params": {"frequency_penalty": 2.1}}, "config.params.frequency_penalty", "-2 and 2"),
        ({"params": {"seed": "7"}}, "config.params.seed", "an integer"),
        ({"params": {"logit_bias": {}}}, "config.params", "'logit_bias'"),
        ({"params": []}, "config.params", "an object"),
        ({"temperature": 1}, "config", "'temperature'"),
        ({"model": 4}, "config.model", "a string"),
        ({"model": ""}, "config.model", "a string"),
        ({"tools": {}}, "config.tools", "a list"),
        ({"tools": [with_(SEARCH, name="no spaces")]}, "config.tools[0].name", "must match"),
        ({"tools": [SEARCH, SEARCH]}, "config.tools[1].name", "unique"),
        (
            {"tools": [with_(SEARCH, parameters={"type": "string"})]},
            "config.tools[0].parameters",
            '"type": "object"',
        ),
        ({"tools": [with_(SEARCH, strict=True)]}, "config.tools[0]", "'strict'"),
        ({"tools": [with_(SEARCH, description=3)]}, "config.tools[0].description", "a string"),
        ({"response_format": {"type": "xml"}}, "config.response_format.type", "one of"),
        (
            {"response_format": {"type": "json_schema"}},
            "config.response_format.json_schema",
            "needs",
        ),
        (
            {"response_format": {"type": "json_object", "json_schema": {}}},
            "config.response_format.json_schema",
            "only for type json_schema",
        ),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "out", "schema": {"type": "array"}},
                }
            },
            "config.response_format.json_schema.schema",
            '"type": "object"',
        ),
        ({"model": "m" * 70_000}, "config", "64 KiB"),
        ([], "config", "an object"),
    ],
)
def test_invalid_config_is_refused_by_path(
    prompt: Storage, config: Any, where: str, says: str
) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        version(prompt, config)
    assert where in caught.value.problems
    assert says in " ".join(caught.value.problems[where])
    assert where in str(caught.value)
    assert prompt.list_versions(ORG, "greeting").items == []
    # An edit is checked alike, and changes nothing.
    version(prompt, CONFIG)
    with pytest.raises(ConfigInvalid):
        prompt.edit_version(ORG, "greeting", "1", "Hi", config=config)
    assert prompt.get_version(ORG, "greeting", "1").config == CONFIG


def test_json_schema_response_format_is_kept(prompt: Storage) -> None:
    config = {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
                "strict": True,
            },
        }
    }
    assert version(prompt, config).config == config
    assert prompt.get_version(ORG, "greeting", "1").config == config


def test_backup_carries_config(prompt: Storage) -> None:
    version(prompt, CONFIG)
    version(prompt, None)
    snapshot = prompt.export_org(ORG)
    item = snapshot.prompts[0]
    assert [v.config for v in item.versions] == [CONFIG, None]
    prompt.import_org(type(snapshot)("copy", snapshot.prompts, (), ()))
    restored = prompt.export_org("copy").prompts[0]
    assert restored.versions == item.versions
    assert prompt.get_version("copy", "greeting", "1").config == CONFIG


def test_review_digest_covers_config(prompt: Storage) -> None:
    version(prompt, CONFIG)
    version(prompt, with_(CONFIG, model="gpt-4o"))
    prompt.create_environment(ORG, "staging", required_approvals=1)
    one = prompt.request_review(ORG, "greeting", "1", "staging", AUTHOR)
    two = prompt.request_review(ORG, "greeting", "2", "staging", AUTHOR)
    # Same content, same contract: only the config tells them apart.
    assert one.content_digest != two.content_digest


def _breaking(prompt: Storage, new: dict[str, Any] | None) -> list[dict[str, Any]]:
    version(prompt, CONFIG)
    prompt.promote(ORG, "greeting", "1", PROMOTER)
    version(prompt, new)
    try:
        prompt.promote(ORG, "greeting", "2", PROMOTER)
    except BreakingPromotion as refused:
        assert prompt.get_production(ORG, "greeting").version == 1
        return [change.to_json() for change in refused.changes]
    return []


def test_removing_a_tool_breaks(prompt: Storage) -> None:
    changes = _breaking(prompt, with_(CONFIG, tools=[]))
    assert [(c["field"], c["change"]) for c in changes] == [("config.tools.search", "removed")]
    assert "variable" not in changes[0]


def test_changing_a_tools_parameters_breaks(prompt: Storage) -> None:
    tool = with_(SEARCH, parameters={"type": "object", "properties": {}})
    changes = _breaking(prompt, with_(CONFIG, tools=[tool]))
    assert [(c["field"], c["change"]) for c in changes] == [("config.tools.search", "changed")]


def test_changing_response_format_breaks(prompt: Storage) -> None:
    changes = _breaking(prompt, with_(CONFIG, response_format={"type": "json_object"}))
    assert [(c["field"], c["change"]) for c in changes] == [("config.response_format", "changed")]
    assert "text" in changes[0]["detail"] and "json_object" in changes[0]["detail"]


def test_other_config_changes_never_break(prompt: Storage) -> None:
    other_tool = {"name": "fetch", "parameters": {"type": "object"}}
    new = with_(
        CONFIG,
        model="gpt-4o",
        provider="azure",
        params={"temperature": 1.5},
        tools=[with_(SEARCH, description="Other words"), other_tool],
    )
    assert _breaking(prompt, new) == []
    assert prompt.get_production(ORG, "greeting").version == 2


def test_breaking_config_is_promoted_when_acknowledged(prompt: Storage) -> None:
    assert _breaking(prompt, None) != []
    promotion = prompt.promote(
        ORG, "greeting", "2", PROMOTER, notes="tools moved", allow_breaking=True
    )
    assert promotion.version.config is None
    assert prompt.list_history(ORG, "greeting").items[0].breaking is True
