"""A guard given when a rollout starts is kept in the same atomic step as the start
(docs/usage.md), on every backend: through a promotion with a percent and through a
review whose approval starts the rollout. No second write follows the start, so no
moment exists where the rollout runs unguarded, and a refused start keeps no guard."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from storage import ReviewExists, RolloutInProgress, Storage
from storage.usage_records import Guard

ORG = "acme"
AUTHOR = "a0000000-0000-4000-8000-000000000001"
REQUESTER = "a0000000-0000-4000-8000-000000000002"
ALICE = "a0000000-0000-4000-8000-000000000003"
GUARD = Guard("error_rate", 0.05, 20)


@pytest.fixture
def prompt(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> Storage:
    """Prompt "greeting": v1 in production and in staging (protected, 1 approval),
    drafts 2 and 3. ``set_guard`` fails: a start that still wrote the guard apart
    would fail here."""
    storage.create_prompt(ORG, "greeting")
    for i in range(3):
        storage.create_version(ORG, "greeting", f"c{i}", AUTHOR)
    storage.promote(ORG, "greeting", "1", AUTHOR)
    storage.create_environment(ORG, "staging", 0)
    storage.promote(ORG, "greeting", "1", AUTHOR, environment="staging")
    storage.update_environment(ORG, "staging", required_approvals=1)

    def no_second_write(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("the guard must be kept with the change, not written after")

    monkeypatch.setattr(storage, "set_guard", no_second_write)
    return storage


def test_a_rollout_starts_with_its_guard_in_one_step(prompt: Storage) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 10, AUTHOR, guard=GUARD)
    assert prompt.get_guard(ORG, rollout.rollout_id) == GUARD


@pytest.mark.parametrize("end", ["abort", "complete"])
def test_a_rollouts_guard_goes_when_it_ends(prompt: Storage, end: str) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 10, AUTHOR, guard=GUARD)
    if end == "abort":
        prompt.abort_rollout(ORG, "greeting", "production")
    else:
        prompt.complete_rollout(ORG, "greeting", "production", AUTHOR)
    assert prompt.get_guard(ORG, rollout.rollout_id) is None


def test_a_refused_start_keeps_no_guard(prompt: Storage) -> None:
    running = prompt.start_rollout(ORG, "greeting", "2", "production", 10, AUTHOR)
    with pytest.raises(RolloutInProgress):
        prompt.start_rollout(ORG, "greeting", "3", "production", 10, AUTHOR, guard=GUARD)
    assert prompt.get_guard(ORG, running.rollout_id) is None


def test_an_unguarded_start_keeps_none(prompt: Storage) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 10, AUTHOR)
    assert prompt.get_guard(ORG, rollout.rollout_id) is None


def test_a_reviews_guard_becomes_its_rollouts_at_approval(prompt: Storage) -> None:
    review = prompt.request_review(
        ORG, "greeting", "2", "staging", REQUESTER, rollout_percent=10, guard=GUARD
    )
    assert prompt.get_guard(ORG, review.review_id) == GUARD
    _, rollout = prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    assert rollout is not None and rollout.rollout_id.startswith("ro_")
    assert prompt.get_guard(ORG, rollout.rollout_id) == GUARD
    assert prompt.get_guard(ORG, review.review_id) is None


def test_a_refused_review_keeps_no_guard(prompt: Storage) -> None:
    first = prompt.request_review(ORG, "greeting", "2", "staging", REQUESTER, rollout_percent=10)
    with pytest.raises(ReviewExists):
        prompt.request_review(
            ORG, "greeting", "2", "staging", REQUESTER, rollout_percent=10, guard=GUARD
        )
    assert prompt.get_guard(ORG, first.review_id) is None


def test_a_guard_without_a_percent_is_not_kept(prompt: Storage) -> None:
    review = prompt.request_review(ORG, "greeting", "2", "staging", REQUESTER, guard=GUARD)
    assert prompt.get_guard(ORG, review.review_id) is None
    _, promotion = prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    assert promotion is not None
    assert prompt.read_environment(ORG, "greeting", "staging").version == 2
