"""The ways around a reviewed release through the command line (docs/api.md section
16), on the real server: a key's review is its owner's, a stale sign-in cannot
approve, and what a review placed stays as reviewed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from identity.roles import SERVICE_READ, SERVICE_WRITE
from tests.cli.conftest import ORG, Cli, CliService
from tests.cli.test_cli_reviews import signed_in


@pytest.fixture
def protected(service: CliService) -> None:
    """greeting v1-v3; production needs one approval."""
    service.text_prompt("greeting", "one\n", "two\n", "three\n")
    service.storage.update_environment(ORG, "production", required_approvals=1)


def key_env(service: CliService, tmp_path: Path, owner: str) -> dict[str, str]:
    """The environment of a Service Write key that the user ``owner`` owns."""
    identity = service.server.app.extensions["identity"]
    user = service.storage.get_user(ORG, owner)
    assert user is not None
    key, secret = identity.create_key(ORG, SERVICE_WRITE, owner=user.user_id)
    return {
        **service.env,
        "PROMPTSVC_KEY_ID": key.client_id,
        "PROMPTSVC_KEY_SECRET": secret,
        "PROMPTSVC_CONFIG_DIR": str(tmp_path / f"{owner}-key"),
    }


def test_a_review_requested_with_a_key_is_its_owners(
    cli: Cli, service: CliService, protected: Any, tmp_path: Path
) -> None:
    ada, bob = signed_in(service, tmp_path, "ada"), signed_in(service, tmp_path, "bob")
    adas_key = key_env(service, tmp_path, "ada")
    opened = cli("prompts", "promote", "greeting", "2", env=adas_key)
    assert opened.status == 0, opened.err
    review = service.storage.list_reviews(ORG).items[0]
    refused = cli("reviews", "approve", review.review_id, env=ada)
    assert refused.status == 1 and "403 forbidden" in refused.err, refused.err
    # One line saying why (issue 30 item 8): no hint about roles, which are not the reason.
    assert len(refused.err.splitlines()) == 1 and "role" not in refused.err, refused.err
    assert service.storage.get_review(ORG, review.review_id).status == "open"
    approved = cli("reviews", "approve", review.review_id, env=bob)
    assert approved.status == 0, approved.err
    assert service.storage.get_in_environment(ORG, "greeting", "production").version == 2


@pytest.mark.parametrize("change", [{"disabled": True}, {"role": SERVICE_READ}])
def test_a_stale_sign_in_cannot_approve(
    cli: Cli, service: CliService, protected: Any, tmp_path: Path, change: dict[str, Any]
) -> None:
    bob = signed_in(service, tmp_path, "bob")
    opened = cli("prompts", "promote", "greeting", "3")  # the Write key nobody owns
    assert opened.status == 0, opened.err
    review = service.storage.list_reviews(ORG).items[0]
    service.server.app.extensions["identity"].update_user(ORG, "bob", **change)
    refused = cli("reviews", "approve", review.review_id, env=bob)
    assert refused.status == 1 and "403 forbidden" in refused.err, refused.err
    assert service.storage.get_review(ORG, review.review_id).status == "open"


def test_an_open_review_is_reused_by_its_reason(
    cli: Cli, service: CliService, protected: Any
) -> None:
    first = cli("prompts", "promote", "greeting", "2")
    again = cli("prompts", "promote", "greeting", "2")
    review = service.storage.list_reviews(ORG).items[0]
    assert first.status == again.status == 0, again.err
    assert f"already open: {review.review_id}" in again.out
