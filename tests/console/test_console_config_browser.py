"""A model configuration's journey in a real browser (headless Chromium) against a real
server: an author sets a version's model, parameters, tools and response format as
fields, is told where a value is out of range, sees the configuration on the version's
page, edits it on a draft, and sees its changes and what they break in the diff.

With ``PROMPTSVC_SCREENSHOTS=1`` the pictures go to docs/console/ (docs/console.md
shows them), else to a temporary directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser_support import SCREENSHOTS, Page, chromium, console_server
from tests.servers import Server

ORG = "acme"
PASSWORD = "correct-horse-battery-staple"
USERS = {"ada": (PASSWORD, "Service Admin")}
SEARCH = {
    "name": "search",
    "description": "Search the docs",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from console_server(tmp_path_factory.mktemp("console-config-server"), {ORG: USERS})


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def page(browser: Any, server: Server, tmp_path: Path) -> Page:
    shots = SCREENSHOTS if os.environ.get("PROMPTSVC_SCREENSHOTS") == "1" else tmp_path
    return Page(browser, server.base_url, shots, ORG, PASSWORD)


def _value(page: Page, name: str) -> str:
    return str(page.driver.find_element(page.by.NAME, name).get_attribute("value"))


def test_set_see_edit_and_compare_a_model_configuration(page: Page) -> None:
    page.sign_in("ada")
    page.new_prompt("helper", "Answers questions about the docs")
    page.fill("content", "Answer {{question}} from the docs.")
    page.fill("config.model", "gpt-4o-mini")
    page.fill("config.provider", "openai")
    page.fill("config.params.temperature", "3")
    page.fill("config.params.max_tokens", "300")
    page.fill("config.tools", json.dumps([SEARCH]))
    page.fill("config.response_format", '{"type": "json_object"}')
    page.click("Save draft")
    # Out of range: said under the field, everything typed kept.
    invalid = page.find(".field.invalid").text
    assert "Must be between 0 and 2" in invalid, page.text()
    assert _value(page, "config.model") == "gpt-4o-mini"
    page.fill("config.params.temperature", "0.2")
    page.click("Save draft")
    assert page.path() == "/console/prompts/helper/versions/1", page.text()

    card = page.find("#config").text
    assert "gpt-4o-mini" in card and "openai" in card
    assert "temperature\n0.2" in card and "max_tokens\n300" in card
    assert "search" in card and "Search the docs" in card
    assert '"type": "json_object"' in card
    page.photo("25-model-config")

    page.click("Promote to production…")
    page.click("Promote v1")
    assert "Version 1 is now production." in page.text()

    # A new version starts from v1's configuration; it drops the tool.
    page.open("/console/prompts/helper/versions/new?from=1")
    assert _value(page, "config.params.temperature") == "0.2"
    assert json.loads(_value(page, "config.tools")) == [SEARCH]
    page.fill("config.tools", "")
    page.click("Save draft")
    assert page.path() == "/console/prompts/helper/versions/2", page.text()

    # Edited on the draft: another model and temperature.
    page.click("Edit")
    page.fill("config.model", "gpt-4o")
    page.fill("config.params.temperature", "0.7")
    page.click("Save changes")
    assert page.path() == "/console/prompts/helper/versions/2", page.text()
    assert "gpt-4o\n" in page.find("#config").text + "\n"

    page.open("/console/prompts/helper/diff?from=1&to=2")
    rows = page.driver.find_elements(page.by.CSS_SELECTOR, "#config-changes tbody tr")
    shown = [row.text for row in rows]
    assert shown == [
        'model "gpt-4o-mini" → "gpt-4o"',
        "params.temperature 0.2 → 0.7",
        "tools.search \u2212 " + json.dumps(SEARCH, sort_keys=True),
    ], shown
    breaking = page.find("#breaking").text
    assert "config.tools.search is gone" in breaking
    page.photo("26-config-diff")
