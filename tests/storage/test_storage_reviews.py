"""Reviews on every backend: the two-person rule, applied in the same atomic step as the
last approval, guarded by what the environment held at the request."""

from __future__ import annotations

import hashlib

import pytest

from storage import (
    AlreadyApproved,
    EnvironmentNotFound,
    LifecycleError,
    PromptNotFound,
    ReviewClosed,
    ReviewExists,
    ReviewForbidden,
    ReviewNotFound,
    ReviewStale,
    Storage,
    VersionNotFound,
)
from tests.clock import FakeClock

ORG = "acme"
AUTHOR = "a0000000-0000-4000-8000-000000000001"
REQUESTER = "a0000000-0000-4000-8000-000000000002"
ALICE = "a0000000-0000-4000-8000-000000000003"
BOB = "a0000000-0000-4000-8000-000000000004"
CAROL = "a0000000-0000-4000-8000-000000000005"


@pytest.fixture
def prompt(storage: Storage) -> Storage:
    """Prompt "greeting" (drafts 1-3 by AUTHOR), production needing 2 approvals, staging 1."""
    storage.create_prompt(ORG, "greeting")
    for i in range(3):
        storage.create_version(ORG, "greeting", f"c{i}", AUTHOR)
    storage.update_environment(ORG, "production", required_approvals=2)
    storage.create_environment(ORG, "staging", 1)
    return storage


def test_request_opens_a_review(prompt: Storage, clock: FakeClock) -> None:
    review = prompt.request_review(
        ORG, "greeting", "2", "production", REQUESTER, notes="ship it", request_id="r1"
    )
    version = prompt.get_version(ORG, "greeting", "2")
    assert review.review_id.startswith("rv_")
    assert review.to_json() == {
        "review_id": review.review_id,
        "prompt_id": version.prompt_id,
        "prompt_name": "greeting",
        "version": 2,
        "version_id": version.version_id,
        "environment": "production",
        "status": "open",
        "requested_by": REQUESTER,
        "requested_at": "2026-01-02T03:04:05.678901Z",
        "notes": "ship it",
        "expected_version": None,
        "required_approvals": 2,
        "approvals": [],
        "rejected_by": None,
        "rejection_comment": None,
        "decided_at": None,
        "rollout_percent": None,
        "allow_breaking": False,
        "breaking": [],
        # docs/api.md's serialization of version 2 ("c1", nothing declared)
        "content_digest": hashlib.sha256(
            b'{"config":null,"content":"c1","examples":[],"variables_schema":null}'
        ).hexdigest(),
        "affected_prompts": [],
    }
    assert prompt.get_review(ORG, review.review_id) == review
    by_version_id = prompt.request_review(ORG, "greeting", version.version_id, "staging", REQUESTER)
    assert (by_version_id.version, by_version_id.required_approvals) == (2, 1)
    event = prompt.events_after(ORG, "0-0", 100)[-2]
    assert (event.type, event.review_id, event.environment, event.status) == (
        "review.requested",
        review.review_id,
        "production",
        "open",
    )
    assert (event.actor, event.request_id, event.version) == (REQUESTER, "r1", 2)


def test_expected_version_is_what_the_environment_holds(prompt: Storage) -> None:
    prompt.update_environment(ORG, "production", required_approvals=0)
    prompt.promote(ORG, "greeting", "1", AUTHOR)
    prompt.update_environment(ORG, "production", required_approvals=1)
    review = prompt.request_review(ORG, "greeting", "2", "production", REQUESTER)
    assert review.expected_version == 1


def test_bad_requests(prompt: Storage) -> None:
    first = prompt.request_review(ORG, "greeting", "2", "production", REQUESTER)
    with pytest.raises(ReviewExists) as dup:
        prompt.request_review(ORG, "greeting", "2", "production", ALICE)
    assert dup.value.review_id == first.review_id
    with pytest.raises(EnvironmentNotFound):
        prompt.request_review(ORG, "greeting", "2", "nope", REQUESTER)
    with pytest.raises(VersionNotFound):
        prompt.request_review(ORG, "greeting", "9", "staging", REQUESTER)
    with pytest.raises(PromptNotFound):
        prompt.request_review(ORG, "nope", "1", "staging", REQUESTER)
    prompt.archive_version(ORG, "greeting", "3")
    with pytest.raises(LifecycleError):
        prompt.request_review(ORG, "greeting", "3", "staging", REQUESTER)
    with pytest.raises(LifecycleError):  # production takes drafts only
        prompt.request_review(ORG, "greeting", "3", "production", REQUESTER)
    with pytest.raises(ReviewNotFound):
        prompt.get_review(ORG, "rv_" + "0" * 32)
    with pytest.raises(ReviewNotFound):
        prompt.get_review(ORG, "rv_x:y")
    with pytest.raises(ReviewNotFound):
        prompt.get_review("other", first.review_id)  # another org's is not found


def test_two_person_rule(prompt: Storage) -> None:
    review = prompt.request_review(ORG, "greeting", "2", "production", REQUESTER)
    with pytest.raises(ReviewForbidden, match="you requested"):
        prompt.approve_review(ORG, review.review_id, REQUESTER, "req")
    with pytest.raises(ReviewForbidden, match="you wrote version 2"):
        prompt.approve_review(ORG, review.review_id, AUTHOR, "author")
    with pytest.raises(ReviewForbidden):
        prompt.reject_review(ORG, review.review_id, AUTHOR)
    approved, promotion = prompt.approve_review(ORG, review.review_id, ALICE, "alice", "lgtm")
    assert promotion is None and approved.status == "open"
    assert [(a.user_id, a.username, a.comment) for a in approved.approvals] == [
        (ALICE, "alice", "lgtm")
    ]
    with pytest.raises(AlreadyApproved):
        prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    assert prompt.get_review(ORG, review.review_id) == approved
    assert prompt.get_prompt(ORG, "greeting").production_version is None


def test_last_approval_applies(prompt: Storage, clock: FakeClock) -> None:
    review = prompt.request_review(ORG, "greeting", "2", "production", REQUESTER, notes="go")
    prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    now = clock.advance(5)
    applied, promotion = prompt.approve_review(ORG, review.review_id, BOB, "bob", request_id="r")
    assert applied.status == "applied" and applied.decided_at == now
    assert promotion is not None
    assert promotion.version.status == "published" and promotion.version.version == 2
    record = promotion.record
    assert (record.review_id, record.approved_by, record.environment) == (
        review.review_id,
        (ALICE, BOB),
        "production",
    )
    assert (record.promoted_by, record.notes, record.previous_version) == (BOB, "go", None)
    assert prompt.list_history(ORG, "greeting").items == [record]
    events = prompt.events_after(ORG, "0-0", 100)[-3:]
    assert [(e.type, e.status, e.review_id) for e in events] == [
        ("review.approved", "applied", review.review_id),
        ("version.promoted", "published", review.review_id),
        ("review.applied", "applied", review.review_id),
    ]
    with pytest.raises(ReviewClosed):
        prompt.approve_review(ORG, review.review_id, CAROL, "carol")
    with pytest.raises(ReviewClosed):
        prompt.cancel_review(ORG, review.review_id, REQUESTER)
    # Closed: another review of the same version may be opened again.
    prompt.request_review(ORG, "greeting", "2", "staging", REQUESTER)


def test_applying_to_another_environment_keeps_the_status(prompt: Storage) -> None:
    review = prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER)
    applied, promotion = prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    assert applied.status == "applied" and promotion is not None
    assert promotion.version.status == "draft" and promotion.version.environments == ["staging"]
    assert prompt.get_in_environment(ORG, "greeting", "staging").version == 1


def test_stale_when_the_environment_moved(prompt: Storage) -> None:
    prompt.update_environment(ORG, "staging", required_approvals=0)
    prompt.promote(ORG, "greeting", "1", AUTHOR, environment="staging")
    prompt.update_environment(ORG, "staging", required_approvals=1)
    review = prompt.request_review(ORG, "greeting", "3", "staging", REQUESTER)
    prompt.request_review(ORG, "greeting", "2", "staging", REQUESTER)
    prompt.update_environment(ORG, "staging", required_approvals=0)
    prompt.promote(ORG, "greeting", "2", AUTHOR, environment="staging")
    history = prompt.list_history(ORG, "greeting").items
    with pytest.raises(ReviewStale) as stale:
        prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    assert (stale.value.current, stale.value.expected, stale.value.environment) == (2, 1, "staging")
    assert prompt.get_review(ORG, review.review_id).status == "stale"
    assert [a.user_id for a in prompt.get_review(ORG, review.review_id).approvals] == [ALICE]
    assert prompt.list_history(ORG, "greeting").items == history
    assert prompt.get_in_environment(ORG, "greeting", "staging").version == 2


def test_open_reviews_keep_their_number_of_approvals(prompt: Storage) -> None:
    review = prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER)
    prompt.update_environment(ORG, "staging", required_approvals=3)
    applied, promotion = prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    assert applied.status == "applied" and promotion is not None


def test_reject_and_cancel(prompt: Storage, clock: FakeClock) -> None:
    first = prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER)
    now = clock.advance(1)
    rejected = prompt.reject_review(ORG, first.review_id, BOB, "not yet")
    assert (rejected.status, rejected.rejected_by, rejected.decided_at) == ("rejected", BOB, now)
    assert rejected.rejection_comment == "not yet"
    second = prompt.request_review(ORG, "greeting", "2", "staging", REQUESTER)
    with pytest.raises(ReviewForbidden, match="requester"):
        prompt.cancel_review(ORG, second.review_id, ALICE)
    assert prompt.cancel_review(ORG, second.review_id, REQUESTER).status == "cancelled"
    third = prompt.request_review(ORG, "greeting", "3", "staging", REQUESTER)
    assert prompt.cancel_review(ORG, third.review_id, ALICE, admin=True).status == "cancelled"
    with pytest.raises(ReviewClosed):
        prompt.reject_review(ORG, third.review_id, BOB)
    types = [e.type for e in prompt.events_after(ORG, "0-0", 100) if e.type.startswith("review.")]
    assert types.count("review.rejected") == 1 and types.count("review.cancelled") == 2


def test_listing_and_filters(prompt: Storage) -> None:
    prompt.create_prompt(ORG, "other")
    prompt.create_version(ORG, "other", "x", AUTHOR)
    made = [
        prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER),
        prompt.request_review(ORG, "greeting", "2", "staging", REQUESTER),
        prompt.request_review(ORG, "other", "1", "production", REQUESTER),
        prompt.request_review(ORG, "greeting", "2", "production", REQUESTER),
    ]
    prompt.cancel_review(ORG, made[1].review_id, REQUESTER)
    ids = [r.review_id for r in made]
    listed = prompt.list_reviews(ORG)
    assert [r.review_id for r in listed.items] == ids[::-1] and listed.next_cursor is None
    page = prompt.list_reviews(ORG, limit=3)
    rest = prompt.list_reviews(ORG, limit=3, cursor=page.next_cursor)
    assert [r.review_id for r in page.items + rest.items] == ids[::-1]
    assert rest.next_cursor is None
    open_ = prompt.list_reviews(ORG, status="open")
    assert [r.review_id for r in open_.items] == [ids[3], ids[2], ids[0]]
    staging = prompt.list_reviews(ORG, environment="staging", status="open")
    assert [r.review_id for r in staging.items] == [ids[0]]
    mine = prompt.list_reviews(ORG, prompt_ref="other")
    assert [r.review_id for r in mine.items] == [ids[2]]
    one = prompt.list_reviews(ORG, prompt_ref="greeting", limit=1)
    assert [r.review_id for r in one.items] == [ids[3]] and one.next_cursor
    with pytest.raises(PromptNotFound):
        prompt.list_reviews(ORG, prompt_ref="nope")


def test_deleting_the_prompt_or_environment_closes_reviews(prompt: Storage) -> None:
    kept = prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER)
    prompt.delete_environment(ORG, "staging")
    assert prompt.get_review(ORG, kept.review_id).status == "cancelled"
    prompt.create_environment(ORG, "staging", 1)
    again = prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER)
    prompt.delete_prompt(ORG, "greeting")
    with pytest.raises(ReviewNotFound):
        prompt.get_review(ORG, again.review_id)
    assert prompt.list_reviews(ORG).items == []


def test_deleting_an_environment_writes_an_event_for_each_review_it_cancels(
    prompt: Storage, clock: FakeClock
) -> None:
    prompt.create_prompt(ORG, "other")
    prompt.create_version(ORG, "other", "x", AUTHOR)
    first = prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER)
    decided = prompt.request_review(ORG, "greeting", "2", "staging", REQUESTER)
    prompt.reject_review(ORG, decided.review_id, ALICE, "no")
    elsewhere = prompt.request_review(ORG, "greeting", "1", "production", REQUESTER)
    second = prompt.request_review(ORG, "other", "1", "staging", REQUESTER)
    last = prompt.events_after(ORG, "0-0", 100)[-1].id
    clock.advance(2)
    prompt.delete_environment(ORG, "staging", actor=ALICE, request_id="req-9")
    events = prompt.events_after(ORG, last, 100)
    versions = {
        r.review_id: prompt.get_version(ORG, r.prompt_name, str(r.version)) for r in (first, second)
    }
    # In request order, one per open review of the environment, in the same step.
    assert [e.to_json() | {"id": None} for e in events] == [
        {
            "id": None,
            "type": "review.cancelled",
            "prompt_id": review.prompt_id,
            "prompt_name": review.prompt_name,
            "version": review.version,
            "version_id": versions[review.review_id].version_id,
            "status": "cancelled",
            "previous_version": None,
            "actor": ALICE,
            "at": "2026-01-02T03:04:07.678901Z",
            "request_id": "req-9",
            "environment": "staging",
            "review_id": review.review_id,
            "rollout_id": None,
            "percent": None,
            "reason": None,
            "guard": None,
        }
        for review in (first, second)
    ]
    for review in (first, second):
        cancelled = prompt.get_review(ORG, review.review_id)
        assert (cancelled.status, cancelled.decided_at) == ("cancelled", clock.utc())
    assert prompt.get_review(ORG, decided.review_id).status == "rejected"
    assert prompt.get_review(ORG, elsewhere.review_id).status == "open"
    # A deletion without reviews to cancel writes no event; nor does a refused one.
    prompt.create_environment(ORG, "empty")
    prompt.delete_environment(ORG, "empty")
    with pytest.raises(LifecycleError):
        prompt.delete_environment(ORG, "production", actor=ALICE)
    with pytest.raises(EnvironmentNotFound):
        prompt.delete_environment(ORG, "staging", actor=ALICE)
    assert prompt.events_after(ORG, events[-1].id, 100) == []


def test_a_deleted_version_cannot_be_applied(prompt: Storage) -> None:
    review = prompt.request_review(ORG, "greeting", "1", "staging", REQUESTER)
    prompt.delete_version(ORG, "greeting", "1")
    with pytest.raises(VersionNotFound):
        prompt.approve_review(ORG, review.review_id, ALICE, "alice")
    assert prompt.get_review(ORG, review.review_id).status == "open"
