"""Usage in a real browser (headless Chromium) against ``promptsvc serve``: the prompt
page charts renders per version over 7 days (inline SVG, nothing fetched), and a
running rollout shows baseline against candidate with its guard; once reports show the
candidate worse, the guard aborts it and the page shows the baseline alone again, and
the abort among the ended rollouts with the guard's figures; a person's abort shows
who aborted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.console.browser_support import Page, chromium, console_server
from tests.servers import Server

ORG = "acme"
PASSWORD = "correct-horse-battery-staple"
USERS = {"wes": (PASSWORD, "Service Write")}
KEY_ID, KEY_SECRET = "app", "app-secret-0123456789-abcdef"
GUARD = {"metric": "error_rate", "threshold": 0.1, "min_samples": 20}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    keys = {ORG: {KEY_ID: (KEY_SECRET, "Service Write")}}
    yield from console_server(tmp_path_factory.mktemp("console-usage-server"), {ORG: USERS}, keys)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def page(browser: Any, server: Server, tmp_path: Path) -> Page:
    return Page(browser, server.base_url, tmp_path, ORG, PASSWORD)


def key_client(server: Server) -> httpx.Client:
    """An API client with the Write key's token."""
    api = httpx.Client(base_url=server.base_url, timeout=30)
    token = api.post(
        "/v1/auth/sdk-token",
        json={"account_id": ORG, "key_id": KEY_ID, "key_secret": KEY_SECRET},
    ).json()["access_token"]
    api.headers["Authorization"] = f"Bearer {token}"
    return api


def test_the_prompt_page_charts_usage_and_a_guard_aborts_the_rollout(
    page: Page, server: Server
) -> None:
    api = key_client(server)
    prompt = api.post("/api/v1/prompts", json={"name": "greeting"}).json()
    for content in ("Hello {{name}}", "Hi {{name}}"):
        api.post("/api/v1/prompts/greeting/versions", json={"content": content})
    api.post("/api/v1/prompts/greeting/versions/1/promote")

    page.sign_in("wes")
    page.open("/console/prompts/greeting")
    assert "No renders reported in the last 7 days" in page.find("#usage").text

    started = api.post(
        "/api/v1/prompts/greeting/versions/2/promote",
        json={"rollout_percent": 20, "rollout_guard": GUARD},
    ).json()

    def report(base: tuple[int, int], cand: tuple[int, int]) -> None:
        items = [
            {"prompt_id": prompt["prompt_id"], "version": version, "environment": "production",
             "rollout_id": started["rollout_id"], "arm": arm, "renders": ok + errors,
             "ok": ok, "errors": errors}
            for arm, version, (ok, errors) in (("baseline", 1, base), ("candidate", 2, cand))
        ]  # fmt: skip
        assert api.post("/api/v1/usage", json={"items": items}).status_code == 202

    report((40, 0), (9, 1))
    page.open("/console/prompts/greeting")
    bars = page.driver.find_elements("css selector", "#usage svg rect.usage-bar")
    assert sorted(bar.get_attribute("data-version") for bar in bars) == ["1", "2"]
    legend = page.find("#usage .usage-legend").text
    assert "v1 40 renders" in legend and "v2 10 renders" in legend
    panel = page.find("#rollouts")
    baseline = page.find("#rollouts tr[data-arm=baseline]").text.lower()
    candidate = page.find("#rollouts tr[data-arm=candidate]").text.lower()
    assert "v1" in baseline and "40" in baseline and "0.0%" in baseline
    assert "v2" in candidate and "10" in candidate and "10.0%" in candidate
    assert "worse than the baseline's by more than 0.1" in panel.text
    assert "Needs 10 more outcomes" in panel.text

    report((0, 0), (5, 5))  # the candidate: 6 errors of 20, the baseline none
    page.open("/console/prompts/greeting")
    assert not page.driver.find_elements("css selector", "#rollouts")
    assert "v1 40 renders" in page.find("#usage .usage-legend").text
    ended = page.find(f"#ended-rollouts tr[data-rollout-id={started['rollout_id']}]").text
    assert "aborted by its guard" in ended
    assert "Error rate: candidate 0.3 against baseline 0" in ended
    assert "threshold 0.1, 20 outcomes per arm" in ended
    events = api.get("/api/v1/events", params={"after": "0-0", "limit": 100}).json()["items"]
    (aborted,) = [e for e in events if e["type"] == "rollout.aborted"]
    assert aborted["reason"] == "guard"


def test_a_persons_abort_shows_who_aborted(page: Page, server: Server) -> None:
    api = key_client(server)
    api.post("/api/v1/prompts", json={"name": "farewell"})
    for content in ("Bye", "Ciao"):
        api.post("/api/v1/prompts/farewell/versions", json={"content": content})
    api.post("/api/v1/prompts/farewell/versions/1/promote")
    started = api.post(
        "/api/v1/prompts/farewell/versions/2/promote", json={"rollout_percent": 30}
    ).json()
    page.sign_in("wes")
    page.open("/console/prompts/farewell")
    assert not page.driver.find_elements("css selector", "#ended-rollouts")
    page.click("Abort: v1 for everyone", kind="button")
    page.open("/console/prompts/farewell")
    ended = page.find(f"#ended-rollouts tr[data-rollout-id={started['rollout_id']}]").text
    assert "aborted by wes" in ended and "a manual abort" in ended
    assert "v2 at 30% over v1" in ended
