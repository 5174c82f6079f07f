"""Composition in the console, in a real browser (headless Chromium) against a real
server (docs/composition.md): the version editor offers the org's text prompts to
include, a version's page links what it includes, and a prompt's page lists the prompts
that include it, each a link."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser_support import SCREENSHOTS, Page, chromium, console_server
from tests.servers import Server

ORG = "acme"
PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    users = {ORG: {"ada": (PASSWORD, "Service Admin")}}
    yield from console_server(tmp_path_factory.mktemp("console-includes-server"), users)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def page(browser: Any, server: Server, tmp_path: Path) -> Page:
    shots = SCREENSHOTS if os.environ.get("PROMPTSVC_SCREENSHOTS") == "1" else tmp_path
    return Page(browser, server.base_url, shots, ORG, PASSWORD)


def test_includes_are_offered_linked_and_listed_both_ways(page: Page) -> None:
    page.sign_in("ada")
    page.new_prompt("safety", "A shared policy")
    assert page.driver.find_elements(page.by.ID, "includable") == []  # nothing to offer yet
    page.fill("content", "Be safe.")
    page.click("Save draft")
    assert page.path() == "/console/prompts/safety/versions/1", page.text()
    assert page.driver.find_elements(page.by.ID, "includes") == []

    page.new_prompt("page", "Includes the policy")
    assert "{{> safety}}" in page.find("#includable").text
    page.fill("content", "{{> safety}} Hi {{name}}. {{> safety@1}}")
    page.click("Save draft")
    assert page.path() == "/console/prompts/page/versions/1", page.text()
    links = page.find("#includes").text
    assert "{{> safety}}" in links and "{{> safety@1}}" in links
    page.photo("40-version-includes")

    page.click("{{> safety@1}}")
    assert page.path() == "/console/prompts/safety/versions/1"
    page.open("/console/prompts/page/versions/1")
    page.click("{{> safety}}")
    assert page.path() == "/console/prompts/safety"
    assert "page" in page.find("#included-by").text
    page.photo("41-included-by")
    page.click("page")
    assert page.path() == "/console/prompts/page"
    assert page.driver.find_elements(page.by.ID, "included-by") == []
