"""A variable contract's journey in a real browser (headless Chromium) against a real
server: an author declares a contract with a version, sees it as a table, makes a
version that breaks it, is stopped on the promote page, and acknowledges the break.

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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from console_server(tmp_path_factory.mktemp("console-contracts-server"), {ORG: USERS})


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def page(browser: Any, server: Server, tmp_path: Path) -> Page:
    shots = SCREENSHOTS if os.environ.get("PROMPTSVC_SCREENSHOTS") == "1" else tmp_path
    return Page(browser, server.base_url, shots, ORG, PASSWORD)


def _cells(page: Page, css: str) -> list[list[str]]:
    rows = page.driver.find_elements(page.by.CSS_SELECTOR, f"{css} tbody tr")
    return [[td.text for td in row.find_elements(page.by.TAG_NAME, "td")] for row in rows]


def test_declare_a_contract_see_it_and_acknowledge_a_breaking_promotion(page: Page) -> None:
    page.sign_in("ada")
    page.new_prompt("order", "What the shop's assistant confirms")
    page.fill("content", "Confirm {{count}} x {{item}}.")
    schema = {
        "item": {"type": "string", "description": "what was ordered"},
        "count": {"type": "integer", "default": 1},
    }
    page.fill("variables_schema", "{not json")
    page.click("Save draft")
    assert "Is not valid JSON" in page.find(".field.invalid").text  # kept, said where
    page.fill("variables_schema", json.dumps(schema))
    page.fill("examples", json.dumps([{"name": "tea", "variables": {"item": "tea"}}]))
    page.click("Save draft")
    assert page.path() == "/console/prompts/order/versions/1", page.text()

    # The contract, as a table.
    assert _cells(page, "table.contract") == [
        ["item", "string", "yes", "—", "any", "what was ordered"],
        ["count", "integer", "no", "1", "any", ""],
    ]
    assert _cells(page, "table.examples") == [["tea", '{"item": "tea"}']]
    page.photo("20-contract")

    page.click("Promote to production…")
    assert not page.driver.find_elements(page.by.NAME, "allow_breaking")  # nothing to break
    page.click("Promote v1")
    assert "Version 1 is now production." in page.text()

    # A version that requires a new variable and narrows nothing else.
    page.open("/console/prompts/order/versions/new?from=1")
    page.fill("content", "Confirm {{count}} x {{item}} in a {{tone}} tone.")
    page.fill(
        "variables_schema",
        json.dumps(schema | {"tone": {"type": "string", "enum": ["kind", "terse"]}}),
    )
    page.click("Save draft")  # v1's example, kept in the form, lacks the new variable
    assert "Examples[0]: 'tone': missing required variable" in page.text()
    page.fill(
        "examples", json.dumps([{"name": "tea", "variables": {"item": "tea", "tone": "kind"}}])
    )
    page.click("Save draft")
    assert page.path() == "/console/prompts/order/versions/2", page.text()

    page.click("Promote to production…")
    breaking = page.find("#breaking").text
    assert "Breaking changes for callers of v1" in breaking
    assert "tone is now required; callers that do not send it will fail" in breaking
    page.fill("notes", "the app sends tone from 2.3")
    page.click("Promote v2")  # the box is not ticked: refused, nothing changed
    assert "tick this box to promote it anyway" in page.find(".acknowledge").text
    assert page.find("#notes").get_attribute("value").strip() == "the app sends tone from 2.3"
    page.find("#allow_breaking").click()
    page.photo("21-breaking-promote")
    page.click("Promote v2")
    assert page.path() == "/console/prompts/order", page.text()
    assert "Version 2 is now production." in page.text()
    history = page.find("#history-heading").find_element(page.by.XPATH, "../..").text
    assert "the app sends tone from 2.3" in history
