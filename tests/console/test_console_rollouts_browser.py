"""A gradual rollout in a real browser (headless Chromium) against ``promptsvc serve``:
a writer starts one at 5% from the promote page, steps it to 25% and 50% with the
prompt page's buttons, then completes it after its confirmation page, while an SDK
client reading production with rollout keys sees each step.

The pages are photographed on the way; with ``PROMPTSVC_SCREENSHOTS=1`` the pictures go
to docs/console/ (where docs/console.md shows them), else to a temporary directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptsvc.client import PromptClient
from promptsvc.rollout import assign
from tests.console.browser_support import SCREENSHOTS, Page, chromium, console_server
from tests.servers import Server

ORG = "acme"
PASSWORD = "correct-horse-battery-staple"
USERS = {"wes": (PASSWORD, "Service Write")}
KEY_ID, KEY_SECRET = "reader-app", "reader-app-secret-0123456789"
KEYS = [f"user-{n}" for n in range(400)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    keys = {ORG: {KEY_ID: (KEY_SECRET, "Service Read")}}
    yield from console_server(
        tmp_path_factory.mktemp("console-rollouts-server"), {ORG: USERS}, keys
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("PROMPTSVC_SCREENSHOTS") == "1":
        return SCREENSHOTS
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def page(browser: Any, server: Server, shots: Path) -> Page:
    return Page(browser, server.base_url, shots, ORG, PASSWORD)


def test_a_rollout_from_five_percent_to_everyone(page: Page, server: Server) -> None:
    page.sign_in("wes")
    page.new_prompt("greeting", "Welcome message")
    page.fill("content", "Hello {{name}}!")
    page.click("Save draft")
    page.click("Promote to production…")
    page.click("Promote v1")
    page.open("/console/prompts/greeting/versions/new")
    page.fill("content", "Hi {{name}}, welcome aboard!")
    page.click("Save draft")

    # The promote page with a percent starts a rollout instead of a promotion.
    page.open("/console/prompts/greeting/versions/2/promote")
    page.fill("rollout_percent", "5")
    page.photo("22-start-rollout")
    page.click("Start rollout")
    assert "Rollout started: v2 goes to 5% of production's callers" in page.text()
    panel = page.find("#rollouts")
    assert "v2 5%" in panel.text and "v1 95%" in panel.text
    rollout_id = page.find("#rollouts input[name=rollout_id]").get_attribute("value")
    assert re.fullmatch(r"ro_[A-Za-z0-9_-]+", rollout_id)

    client = PromptClient(
        server.base_url, account_id=ORG, key_id=KEY_ID, key_secret=KEY_SECRET, watch=True
    )
    try:
        page.wait.until(lambda _: client.watching)

        def served(percent: int) -> bool:
            """Whether the client serves each key the side ``percent`` gives it."""
            got = {k: client.get_prompt_version("greeting", rollout_key=k).version for k in KEYS}
            return got == {k: 2 if assign(rollout_id, k, percent) else 1 for k in KEYS}

        page.wait.until(lambda _: served(5))
        for step in ("25", "50"):
            page.click(f"{step}%", kind="button")
            assert f"v2 now reaches {step}% of production's callers" in page.text()
            page.wait.until(lambda _, step=step: served(int(step)))  # within the wait's 10 s
        page.photo("23-rollout-panel")

        page.click("Complete: v2 for everyone…")
        assert "Complete the rollout: v2 for every caller of production?" in page.text()
        page.fill("notes", "Good numbers at 50%")
        page.photo("24-complete-rollout")
        page.click("Complete: v2 for everyone", kind="button")
        assert "Rollout completed: v2 is production's version for every caller." in page.text()
        assert not page.driver.find_elements(page.by.CSS_SELECTOR, "#rollouts")
        history = page.find("#history-heading").find_element(page.by.XPATH, "../..").text
        assert "Good numbers at 50%" in history
        page.wait.until(
            lambda _: (
                {client.get_prompt_version("greeting", rollout_key=k).version for k in KEYS} == {2}
            )
        )
    finally:
        client.close()
