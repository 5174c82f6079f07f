"""Model configuration in the console: a version's page shows it, the version form
edits it as fields (with JSON for tools and response_format) on a new version and on a
draft, storage's problems land under the field of their path, a frozen draft cannot
be edited, and the diff page lists its changes and what they break."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient

from storage import Storage
from tests.console.console_support import ORG, post_form

Console = Callable[..., FlaskClient]

SEARCH = {
    "name": "search",
    "description": "Search the docs",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
CONFIG: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "provider": "openai",
    "params": {"temperature": 0.2, "max_tokens": 300, "stop": ["END", "STOP"]},
    "tools": [SEARCH],
    "response_format": {"type": "json_object"},
}
FIELDS = {
    "config.model": "gpt-4o-mini",
    "config.provider": "openai",
    "config.params.temperature": "0.2",
    "config.params.max_tokens": "300",
    "config.params.stop": "END\r\nSTOP",
    "config.tools": '[{"name": "search", "description": "Search the docs", "parameters": '
    '{"type": "object", "properties": {"q": {"type": "string"}}}}]',
    "config.response_format": '{"type": "json_object"}',
}


def _prompt(storage: Storage, config: dict[str, Any] | None = None) -> None:
    storage.create_prompt(ORG, "helper")
    storage.create_version(ORG, "helper", "Answer {{q}}", "x", variables=["q"], config=config)


def _field(page: str, name: str) -> str:
    """The value of an input, or the text of a textarea, named ``name``."""
    found = re.search(rf'name="{re.escape(name)}"[^>]*value="([^"]*)"', page) or re.search(
        rf'name="{re.escape(name)}"[^>]*>\n(.*?)</textarea>', page, re.S
    )
    assert found, name
    return html.unescape(found.group(1))


def _errors(page: str, name: str) -> str:
    block = page.split(f'id="{name}"')[1].split('<div class="field')[0]
    # Lower case: the form capitalizes each message.
    return html.unescape(re.sub(r"<[^>]+>", " ", block)).lower()


def test_a_versions_page_shows_its_config(storage: Storage, console: Console) -> None:
    _prompt(storage, CONFIG)
    page = console("reader").get("/console/prompts/helper/versions/1").text
    card = html.unescape(page.split('id="config"')[1].split("</section>")[0])
    assert "<code>gpt-4o-mini</code>" in card and "openai" in card
    assert "<dt>temperature</dt><dd><code>0.2</code></dd>" in card
    assert '<dt>stop</dt><dd><code>["END", "STOP"]</code></dd>' in card
    assert "<code>search</code>" in card and "Search the docs" in card
    assert '"type": "json_object"' in card
    storage.create_version(ORG, "helper", "Plain", "x")
    plain = console("writer").get("/console/prompts/helper/versions/2").text
    assert "None: callers choose the model" in plain.split('id="config"')[1]


def test_a_new_version_takes_its_config_from_the_fields(storage: Storage, console: Console) -> None:
    _prompt(storage)
    client = console("writer")
    url = "/console/prompts/helper/versions/new"
    made = post_form(client, url, url, content="Answer {{q}} now", **FIELDS)
    assert made.status_code == 302, made.text
    assert storage.get_version(ORG, "helper", "2").config == CONFIG
    # A new version from it starts with its config in the fields.
    form = client.get(f"{url}?from=2").text
    assert _field(form, "config.model") == "gpt-4o-mini"
    assert _field(form, "config.params.temperature") == "0.2"
    assert _field(form, "config.params.stop") == "END\nSTOP"
    assert '"name": "search"' in _field(form, "config.tools")
    # Every field empty: no config.
    again = post_form(client, url, url, content="Plain")
    assert again.status_code == 302, again.text
    assert storage.get_version(ORG, "helper", "3").config is None


def test_problems_land_under_their_fields(storage: Storage, console: Console) -> None:
    _prompt(storage)
    client = console("writer")
    url = "/console/prompts/helper/versions/new"
    bad = {
        **FIELDS,
        "config.params.temperature": "3",
        "config.params.top_p": "high",
        "config.tools": '[{"name": "no spaces", "parameters": {"type": "object"}}]',
    }
    refused = post_form(client, url, url, content="x", **bad)
    assert refused.status_code == 400
    # Not a number: the form says so before the service sees anything.
    assert "must be a number" in _errors(refused.text, "config.params.top_p")
    bad["config.params.top_p"] = "0.5"
    refused = post_form(client, url, url, content="x", **bad)
    assert refused.status_code == 400
    assert "must be between 0 and 2" in _errors(refused.text, "config.params.temperature")
    assert "[0].name: must match" in _errors(refused.text, "config.tools")
    assert _field(refused.text, "config.model") == "gpt-4o-mini"  # kept as typed
    broken = post_form(client, url, url, content="x", **{"config.response_format": "{nope"})
    assert broken.status_code == 400
    assert "is not valid json" in _errors(broken.text, "config.response_format")
    assert storage.list_versions(ORG, "helper").items[0].version == 1  # nothing saved


def test_a_drafts_config_is_edited_and_cleared(storage: Storage, console: Console) -> None:
    _prompt(storage, CONFIG)
    client = console("writer")
    url = "/console/prompts/helper/versions/1/edit"
    form = client.get(url).text
    assert _field(form, "config.params.max_tokens") == "300"
    fields = {**FIELDS, "config.params.temperature": "1", "config.params.seed": "7"}
    edited = post_form(client, url, url, content="Answer {{q}}", **fields)
    assert edited.status_code == 302, edited.text
    config = storage.get_version(ORG, "helper", "1").config
    assert config is not None and config["params"] == {
        "temperature": 1,
        "max_tokens": 300,
        "stop": ["END", "STOP"],
        "seed": 7,
    }
    # A post without the config's fields keeps it; one with them all empty clears it.
    kept = post_form(client, url, url, content="Answer {{q}}!")
    assert kept.status_code == 302 and storage.get_version(ORG, "helper", "1").config == config
    empty = {name: "" for name in FIELDS}
    cleared = post_form(client, url, url, content="Answer {{q}}", **empty)
    assert cleared.status_code == 302, cleared.text
    assert storage.get_version(ORG, "helper", "1").config is None


def test_a_frozen_drafts_config_cannot_be_edited(storage: Storage, console: Console) -> None:
    _prompt(storage, CONFIG)
    storage.create_environment(ORG, "staging")
    storage.promote(ORG, "helper", "1", "x", environment="staging")
    client = console("writer")
    assert client.get("/console/prompts/helper/versions/1/edit").status_code == 409
    page = client.get("/console/prompts/helper/versions/1").text
    assert "/versions/1/edit" not in page


def test_the_diff_lists_config_changes_and_what_breaks(storage: Storage, console: Console) -> None:
    _prompt(storage, CONFIG)
    storage.promote(ORG, "helper", "1", "x")
    new = {**CONFIG, "model": "gpt-4o", "tools": [], "params": {"temperature": 0.7}}
    storage.create_version(ORG, "helper", "Answer {{q}}", "x", variables=["q"], config=new)
    page = html.unescape(console("reader").get("/console/prompts/helper/diff?from=1&to=2").text)
    changes = page.split('id="config-changes"')[1].split("</section>")[0]
    rows = re.findall(r'<td class="change-(\w+)">(.*?)</td>', changes)
    assert rows == [
        ("changed", "model"),
        ("changed", "params.temperature"),
        ("removed", "params.max_tokens"),
        ("removed", "params.stop"),
        ("removed", "tools.search"),
    ]
    assert '"gpt-4o-mini"</span> → <span class="change-added">"gpt-4o"' in changes
    breaking = page.split('id="breaking"')[1].split("</section>")[0]
    assert "<code>config.tools.search</code> is gone" in breaking
    assert "Applications that use v1 today rely on what v2 changes:" in breaking
    same = console("reader").get("/console/prompts/helper/diff?from=1&to=1").text
    assert 'id="config-changes"' not in same
