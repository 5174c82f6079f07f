"""``promptsvc reviews ...``, ``prompts promote/rollback --env`` and ``apply --promote
--env`` against the real server on memory and Redis: a key opens reviews, signed-in
people decide them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from identity.roles import SERVICE_WRITE
from promptsvc.cli import credentials
from tests.cli.conftest import ORG, Cli, CliService
from tests.identity.people_support import PASSWORD, tokens_for


def signed_in(service: CliService, tmp_path: Path, username: str) -> dict[str, str]:
    """The environment of ``username`` signed in (a saved login of its own)."""
    app = service.server.app
    app.extensions["identity"].create_user(ORG, username, SERVICE_WRITE, PASSWORD)
    body = tokens_for(app.test_client(), username=username)
    folder = tmp_path / username
    login = credentials.SavedLogin.from_tokens(service.url, ORG, body, time.time())
    credentials.save(credentials.credentials_path({"PROMPTSVC_CONFIG_DIR": str(folder)}), login)
    return {"PROMPTSVC_CONFIG_DIR": str(folder)}


@pytest.fixture
def staged(service: CliService, tmp_path: Path) -> dict[str, Any]:
    """greeting v1-v3; staging (1 approval) and production (1 approval) protected."""
    service.text_prompt("greeting", "one\n", "two\n", "three\n")
    service.storage.create_environment(ORG, "staging", 1)
    service.storage.update_environment(ORG, "production", required_approvals=1)
    key = {**service.env, "PROMPTSVC_CONFIG_DIR": str(tmp_path / "nobody")}
    return {"key": key}


def _json(result: Any) -> Any:
    assert result.status == 0, result.err
    return json.loads(result.out)


def test_promote_into_a_protected_environment_opens_a_review(
    cli: Cli, service: CliService, staged: dict[str, Any], tmp_path: Path
) -> None:
    key = staged["key"]
    opened = cli("prompts", "promote", "greeting", "2", "--env", "staging", env=key)
    assert opened.status == 0, opened.err
    review = service.storage.list_reviews(ORG).items[0]
    assert opened.out == (
        f"staging needs 1 approval(s): review opened {review.review_id} for greeting v2\n"
    )
    again = cli("prompts", "promote", "greeting", "2", "--env", "staging", env=key)
    assert f"already open: {review.review_id}" in again.out
    listed = cli("reviews", "list", "--status", "open", env=key)
    rows = [line.split("\t") for line in listed.out.splitlines()]
    assert [r[:6] for r in rows] == [[review.review_id, "greeting", "2", "staging", "open", "0/1"]]
    shown = cli("reviews", "show", review.review_id, env=key)
    assert shown.status == 0 and "staging holds no version of this prompt now" in shown.out
    # The requester by name, as history names them (issue 30 item 12), not a user id.
    assert f" by key {key['PROMPTSVC_KEY_ID']}\n" in shown.out, shown.out

    # A key cannot approve; a signed-in person who did not write it can.
    refused = cli("reviews", "approve", review.review_id, env=key)
    assert refused.status == 1 and "only a person can approve" in refused.err
    # The refusal says why in one line: no hint about roles, which are not the reason.
    assert len(refused.err.splitlines()) == 1, refused.err
    ada = signed_in(service, tmp_path, "ada")
    approved = cli("reviews", "approve", review.review_id, "--comment", "ok", env=ada)
    assert approved.status == 0, approved.err
    assert approved.out.startswith(
        f"approved {review.review_id} (greeting v2 -> staging): now applied"
    )
    assert service.storage.get_in_environment(ORG, "greeting", "staging").version == 2
    twice = cli("reviews", "approve", review.review_id, env=ada)
    assert twice.status == 1 and "409 conflict" in twice.err

    # The next review shows its diff against what staging holds now.
    body = _json(cli("prompts", "promote", "greeting", "3", "--env", "staging", "--json", env=key))
    assert body["opened"] is True
    shown = cli("reviews", "show", body["review"]["review_id"], env=key)
    assert "changes from v2 (in staging now):" in shown.out and "+three" in shown.out
    rejected = _json(
        cli("reviews", "reject", body["review"]["review_id"], "--comment", "no", "--json", env=ada)
    )
    assert (rejected["status"], rejected["rejection_comment"]) == ("rejected", "no")
    shown = cli("reviews", "show", body["review"]["review_id"], env=key)
    assert "rejected by ada: no\n" in shown.out, shown.out
    body = _json(cli("prompts", "promote", "greeting", "3", "--env", "staging", "--json", env=key))
    cancelled = cli("reviews", "cancel", body["review"]["review_id"], env=key)
    assert cancelled.status == 0 and "now cancelled" in cancelled.out


def test_a_review_of_a_rollout_shows_its_percent(
    cli: Cli, service: CliService, staged: dict[str, Any], tmp_path: Path
) -> None:
    key = staged["key"]
    service.storage.update_environment(ORG, "staging", required_approvals=0)
    service.storage.promote(ORG, "greeting", "1", "x", environment="staging")
    service.storage.update_environment(ORG, "staging", required_approvals=1)
    opened = cli(
        "rollout", "start", "greeting", "2", "--env", "staging", "--percent", "10", env=key
    )
    assert opened.status == 0, opened.err
    review = service.storage.list_reviews(ORG).items[0]
    assert review.rollout_percent == 10
    listed = cli("reviews", "list", env=key)
    assert [line.split("\t")[-1] for line in listed.out.splitlines()] == ["10%"]
    shown = cli("reviews", "show", review.review_id, env=key)
    assert "once approved: a rollout of v2 to 10% of callers, not a promotion" in shown.out
    ada = signed_in(service, tmp_path, "ada")
    approved = cli("reviews", "approve", review.review_id, env=ada)
    assert approved.status == 0, approved.err
    assert "now rolling out to 10% of callers" in approved.out, approved.out


def test_promote_and_rollback_in_an_open_environment(
    cli: Cli, service: CliService, staged: dict[str, Any]
) -> None:
    service.storage.create_environment(ORG, "qa")
    key = staged["key"]
    for ref in ("1", "2"):
        done = cli("prompts", "promote", "greeting", ref, "--env", "qa", env=key)
        assert done.status == 0, done.err
    assert done.out == "promoted greeting: v2 is in qa (was v1)\n"
    moved = cli("prompts", "promote", "greeting", "3", "--env", "qa", "--expect", "1", env=key)
    assert moved.status == 1 and "qa is version 2, expected version 1" in moved.err
    back = cli("prompts", "rollback", "greeting", "--env", "qa", env=key)
    assert back.out == "rolled back greeting: v1 is in qa (was v2)\n"
    missing = cli("prompts", "promote", "greeting", "1", "--env", "nope", env=key)
    assert missing.status == 1 and "404 not_found" in missing.err


def test_apply_against_a_protected_environment_opens_reviews(
    cli: Cli, service: CliService, staged: dict[str, Any], tmp_path: Path
) -> None:
    key = staged["key"]
    folder = tmp_path / "prompts"
    assert cli("pull", folder, env=key).status == 0
    plan = cli("plan", folder, "--promote", "--env", "staging", env=key)
    assert plan.status == 2
    assert "^ greeting: open a review for staging (staging is none)" in plan.out
    assert "1 review(s) to open" in plan.out
    applied = cli("apply", folder, "--promote", "--env", "staging", env=key)
    assert applied.status == 0, applied.err
    review = service.storage.list_reviews(ORG).items[0]
    assert (review.version, review.environment) == (3, "staging")
    assert f"? greeting: review {review.review_id} opened for v3 in staging" in applied.out
    assert "1 review(s) awaiting approval" in applied.out
    # The plan now says the review is open, rather than proposing to open one.
    replan = cli("plan", folder, "--promote", "--env", "staging", env=key)
    assert (
        f"= greeting: review {review.review_id} already open for v3 in staging "
        "(staging is none)" in replan.out
    ), replan.out
    assert "open a review" not in replan.out and "review(s) to open" not in replan.out
    assert "Nothing to apply: 1 review(s) already open, awaiting approval." in replan.out
    planned = cli("plan", folder, "--promote", "--env", "staging", "--json", env=key)
    assert json.loads(planned.out)["changes"][0]["open_review"] == review.review_id
    again = _json(cli("apply", folder, "--promote", "--env", "staging", "--json", env=key))
    assert again["actions"] == [
        {
            "name": "greeting",
            "action": "request_review",
            "version": 3,
            "environment": "staging",
            "review_id": review.review_id,
        }
    ]
    service.storage.create_environment(ORG, "qa")
    to_qa = cli("apply", folder, "--promote", "--env", "qa", env=key)
    assert to_qa.status == 0 and "^ greeting: promoted v3 to qa (was none)" in to_qa.out
    assert cli("plan", folder, "--promote", "--env", "qa", env=key).status == 0
    unknown = cli("plan", folder, "--promote", "--env", "nope", env=key)
    assert unknown.status == 1 and "environment 'nope' does not exist" in unknown.err
