"""How a prompt's rollouts ended, through the API (docs/usage.md): ``GET
.../history/rollouts`` shows a guard's abort with its figures, a person's abort with
who, and a completion; newest first, only the prompt's own."""

from __future__ import annotations

from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE
from tests.api.conftest import Api
from tests.api.test_api_rollouts import PROMPT, ROLLOUT, error, start
from tests.api.test_api_usage import GUARD, arm_items, report

ENDED = f"{PROMPT}/history/rollouts"


@pytest.fixture
def prompt(api: Api) -> dict[str, Any]:
    """greeting: v1 in production, drafts v2 and v3; other: v1 in production, draft v2."""
    created = api.create_prompt("greeting")
    for content in ("one", "two", "three"):
        api.create_version("greeting", content)
    api.promote("greeting", 1)
    api.create_prompt("other")
    api.create_version("other", "one")
    api.create_version("other", "two")
    api.promote("other", 1)
    return created


def ended(api: Api) -> list[dict[str, Any]]:
    found = api.get(ENDED, role=SERVICE_READ)
    assert found.status_code == 200, found.json
    items: list[dict[str, Any]] = found.json["items"]
    return items


def test_a_guards_abort_shows_with_its_figures(api: Api, prompt: dict[str, Any]) -> None:
    rollout = start(api, rollout_guard=GUARD)
    report(api, *arm_items(prompt["prompt_id"], rollout["rollout_id"], (10, 0), (5, 5)))
    (aborted,) = ended(api)
    assert aborted["rollout_id"] == rollout["rollout_id"]
    assert (aborted["outcome"], aborted["reason"]) == ("aborted", "guard")
    assert aborted["guard"] == {
        "metric": "error_rate",
        "threshold": 0.1,
        "baseline": 0.0,
        "candidate": 0.5,
        "samples": 10,
    }
    assert (aborted["ended_by"], aborted["ended_by_name"]) == (None, None)
    assert (aborted["environment"], aborted["baseline_version"]) == ("production", 1)
    assert (aborted["candidate_version"], aborted["percent"]) == (2, 10)
    assert aborted["ended_at"].endswith("Z")


def test_a_persons_abort_and_a_completion_show_who_newest_first(
    api: Api, prompt: dict[str, Any]
) -> None:
    first = start(api, rollout_guard=GUARD)
    aborted = api.post(f"{ROLLOUT}/abort", role=SERVICE_WRITE)
    assert aborted.status_code == 200, aborted.json
    second = start(api, version=3)
    assert api.post(f"{ROLLOUT}/complete", role=SERVICE_WRITE).status_code == 200
    other = api.post("/api/v1/prompts/other/versions/2/promote", json={"rollout_percent": 5})
    assert api.post("/api/v1/prompts/other/rollouts/production/abort").status_code == 200, other
    completed, manual = ended(api)
    assert (completed["rollout_id"], completed["outcome"]) == (second["rollout_id"], "completed")
    assert (completed["reason"], completed["guard"]) == (None, None)
    assert (manual["rollout_id"], manual["outcome"]) == (first["rollout_id"], "aborted")
    assert (manual["reason"], manual["guard"]) == ("manual", None)
    assert manual["ended_by"] is not None and manual["ended_by_name"]
    limited = api.get(f"{ENDED}?limit=1", role=SERVICE_READ).json["items"]
    assert [r["rollout_id"] for r in limited] == [second["rollout_id"]]


def test_bad_reads(api: Api, prompt: dict[str, Any]) -> None:
    assert ended(api) == []
    error(api.get("/api/v1/prompts/nope/history/rollouts", role=SERVICE_READ), 404, "not_found")
    for bad in ("0", "201", "x"):
        error(api.get(f"{ENDED}?limit={bad}", role=SERVICE_READ), 400, "bad_request")
    error(api.get(ENDED, role=None), 401, "unauthorized")
