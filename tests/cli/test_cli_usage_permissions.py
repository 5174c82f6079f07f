"""The ways around a guarded rollout and a reviewed one through the command line, on
the real server (issues 29 and 33): ``promptsvc rollout start --guard`` refuses a Read
key, a revoked key and another org's key, changing nothing; the person who requested a
review cannot approve it, and a guarded rollout's review keeps its guard until a second
person's approval starts the rollout with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from identity.roles import SERVICE_WRITE
from storage import RolloutNotFound
from tests.cli.conftest import ORG, Cli, CliService
from tests.cli.test_cli_reviews import signed_in

START = ("rollout", "start", "greeting", "2", "--percent", "10", "--guard", "error_rate:0.05:20")


@pytest.fixture
def greeting(service: CliService) -> None:
    """greeting v1 in production, v2 a draft."""
    service.text_prompt("greeting", "one\n", "two\n", production=1)


def no_rollout(service: CliService) -> None:
    with pytest.raises(RolloutNotFound):
        service.storage.get_rollout(ORG, "greeting", "production")


def key_of(service: CliService, org: str, *, revoked: bool = False) -> dict[str, str]:
    identity = service.server.app.extensions["identity"]
    key, secret = identity.create_key(org, SERVICE_WRITE)
    if revoked:
        identity.revoke_key(org, key.client_id)
    return {
        **service.env,
        "PROMPTSVC_ACCOUNT_ID": org,
        "PROMPTSVC_KEY_ID": key.client_id,
        "PROMPTSVC_KEY_SECRET": secret,
    }


def test_a_read_key_cannot_start_a_guarded_rollout(
    cli: Cli, service: CliService, greeting: None
) -> None:
    refused = cli(*START, env=service.read_env)
    assert refused.status == 1 and "403 forbidden" in refused.err, refused.err
    no_rollout(service)


def test_a_revoked_key_cannot_start_one(cli: Cli, service: CliService, greeting: None) -> None:
    refused = cli(*START, env=key_of(service, ORG, revoked=True))
    assert refused.status == 1 and "401" in refused.err, refused.err
    no_rollout(service)


def test_another_orgs_key_cannot_reach_this_orgs_prompt(
    cli: Cli, service: CliService, greeting: None
) -> None:
    refused = cli(*START, env=key_of(service, "globex"))
    assert refused.status == 1 and "404" in refused.err, refused.err
    no_rollout(service)


def test_the_requester_cannot_approve_a_guarded_rollouts_review(
    cli: Cli, service: CliService, greeting: None, tmp_path: Path
) -> None:
    service.storage.update_environment(ORG, "production", required_approvals=1)
    ada, bob = signed_in(service, tmp_path, "ada"), signed_in(service, tmp_path, "bob")
    opened = cli(*START, env=ada)
    assert opened.status == 0, opened.err
    (review,) = service.storage.list_reviews(ORG).items
    assert review.rollout_percent == 10
    refused = cli("reviews", "approve", review.review_id, env=ada)
    assert refused.status == 1 and "403 forbidden" in refused.err, refused.err
    assert service.storage.get_review(ORG, review.review_id).status == "open"
    no_rollout(service)
    approved = cli("reviews", "approve", review.review_id, env=bob)
    assert approved.status == 0, approved.err
    rollout = service.storage.get_rollout(ORG, "greeting", "production")
    guard: Any = service.storage.get_guard(ORG, rollout.rollout_id)
    assert guard is not None and guard.to_json() == {
        "metric": "error_rate",
        "threshold": 0.05,
        "min_samples": 20,
    }
