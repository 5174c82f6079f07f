"""Conditional sections in the console, in a real browser (headless Chromium) against a
real server (docs/api.md section 4.6): the version editor's Preview renders the draft with its
examples and each section both ways before anything is saved, a broken tag is refused
naming its line and column, and the saved version's page shows the same previews."""

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
LETTER = (
    "Hi {{name}}.\n{{#formal}}\nYours faithfully.\n{{/formal}}\n{{^formal}}\nCheers!\n{{/formal}}"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    users = {ORG: {"ada": (PASSWORD, "Service Admin")}}
    yield from console_server(tmp_path_factory.mktemp("console-sections-server"), users)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def page(browser: Any, server: Server, tmp_path: Path) -> Page:
    shots = SCREENSHOTS if os.environ.get("PROMPTSVC_SCREENSHOTS") == "1" else tmp_path
    return Page(browser, server.base_url, shots, ORG, PASSWORD)


def shown(page: Page) -> dict[str, str]:
    """Each preview's label and rendered text, as the page shows them."""
    blocks = page.driver.find_elements(page.by.CSS_SELECTOR, "#preview .preview")
    return {
        block.get_attribute("data-label"): block.find_element(page.by.CSS_SELECTOR, "pre").text
        for block in blocks
    }


def test_the_editor_previews_each_branch_and_the_page_shows_them(page: Page) -> None:
    page.sign_in("ada")
    page.new_prompt("letter", "How a letter ends")
    page.fill("content", "Hi {{name}}.\n{{#formal}}\nYours faithfully.")
    page.click("Save draft")
    refused = page.find(".field.invalid").text  # the form stays, the mistake said there
    assert "Section {{#formal}} at line 2, column 1 is never closed" in refused

    page.fill("content", LETTER)
    page.fill("examples", json.dumps([{"name": "ada", "variables": {"name": "Ada"}}]))
    page.click("Preview")
    assert page.path() == "/console/prompts/letter/versions/new"  # nothing saved
    assert shown(page) == {
        "ada": "Hi Ada.\nCheers!",
        "ada, formal = true": "Hi Ada.\nYours faithfully.",
        "ada, formal = false": "Hi Ada.\nCheers!",
    }
    page.photo("30-sections-preview")

    page.fill("examples", json.dumps([{"name": "ada", "variables": {"formal": "yes"}}]))
    page.click("Preview")
    problem = page.find("#preview .flash.error").text
    assert "examples[0]" in problem and "'formal': expected boolean" in problem

    page.fill(
        "examples",
        json.dumps([{"name": "sir", "variables": {"name": "Sir", "formal": True}}]),
    )
    page.click("Save draft")
    assert page.path() == "/console/prompts/letter/versions/1", page.text()
    assert shown(page) == {
        "sir": "Hi Sir.\nYours faithfully.",
        "sir, formal = true": "Hi Sir.\nYours faithfully.",
        "sir, formal = false": "Hi Sir.\nCheers!",
    }
