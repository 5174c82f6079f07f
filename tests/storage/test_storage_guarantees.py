"""What a reviewed release guarantees (docs/api.md sections 5 and 16), on every backend: the
attacks of issue 29, each refused in storage whatever calls it.

1. unarchive, edit, roll back: content nobody reviewed back in production;
2. a draft held by a protected environment edited in place (or edited, then rolled
   back to);
3. a requested draft edited before its approval;
4. the owner of a key approving what the key wrote or requested;
5. a disabled or demoted user approving with a token that still says otherwise.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from storage import ReviewForbidden, Storage, VersionFrozen
from tests.storage.test_storage_users import user

ORG = "acme"
KEY = "key-service-account"  # a key's identity (token sub), owned by OWNER
OWNER = user("owner", role="Service Write")
ALICE = user("alice", role="Service Write")
BOB = user("bob", role="Service Write")


@pytest.fixture
def prompt(storage: Storage) -> Storage:
    """greeting: v1 "one" and v2 "two" by alice; production and staging (protected)."""
    for person in (OWNER, ALICE, BOB):
        storage.add_user(person)
    storage.create_prompt(ORG, "greeting")
    storage.create_version(ORG, "greeting", "one", ALICE.user_id, person=ALICE.user_id)
    storage.create_version(ORG, "greeting", "two", ALICE.user_id, person=ALICE.user_id)
    storage.create_environment(ORG, "staging", 1)
    return storage


def test_an_unarchived_production_version_stays_frozen(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", ALICE.user_id)
    prompt.promote(ORG, "greeting", "2", ALICE.user_id)
    assert prompt.get_version(ORG, "greeting", "1").status == "archived"
    assert prompt.unarchive_version(ORG, "greeting", "1").status == "draft"
    with pytest.raises(VersionFrozen) as caught:
        prompt.edit_version(ORG, "greeting", "1", "unreviewed")
    assert caught.value.reason == "frozen"
    back = prompt.rollback(ORG, "greeting", BOB.user_id)
    assert (back.version.version, back.version.content) == (1, "one")
    assert prompt.get_production(ORG, "greeting").content == "one"


def test_a_draft_a_protected_environment_holds_is_frozen(prompt: Storage) -> None:
    review = prompt.request_review(ORG, "greeting", "2", "staging", ALICE.user_id)
    _, placed = prompt.approve_review(ORG, review.review_id, BOB.user_id, "bob")
    assert placed is not None and placed.version.status == "draft"
    with pytest.raises(VersionFrozen):
        prompt.edit_version(ORG, "greeting", "2", "unreviewed")
    assert prompt.get_in_environment(ORG, "greeting", "staging").content == "two"
    # Held before, then replaced: still frozen, so a rollback brings back what was there.
    prompt.create_version(ORG, "greeting", "three", ALICE.user_id)
    review = prompt.request_review(ORG, "greeting", "3", "staging", ALICE.user_id)
    prompt.approve_review(ORG, review.review_id, BOB.user_id, "bob")
    with pytest.raises(VersionFrozen):
        prompt.edit_version(ORG, "greeting", "2", "unreviewed")
    back = prompt.rollback(ORG, "greeting", ALICE.user_id, environment="staging")
    assert (back.version.version, back.version.content) == (2, "two")


def test_a_requested_draft_cannot_change_before_its_approval(prompt: Storage) -> None:
    review = prompt.request_review(ORG, "greeting", "2", "production", ALICE.user_id)
    # docs/api.md: sha256 of the stored content, schema, examples and config.
    source = {"config": None, "content": "two", "examples": [], "variables_schema": None}
    serialized = json.dumps(source, sort_keys=True, separators=(",", ":"))
    assert review.content_digest == hashlib.sha256(serialized.encode()).hexdigest()
    with pytest.raises(VersionFrozen):
        prompt.edit_version(ORG, "greeting", "2", "bob's own text", actor=BOB.user_id)
    # Cancelled before anything was placed: the draft may change again.
    prompt.cancel_review(ORG, review.review_id, ALICE.user_id)
    edited = prompt.edit_version(
        ORG, "greeting", "2", "bob's own text", actor=BOB.user_id, person=BOB.user_id
    )
    assert edited.content == "bob's own text"
    # ... and its editor counts as its author: bob may not approve it.
    review = prompt.request_review(ORG, "greeting", "2", "production", ALICE.user_id)
    with pytest.raises(ReviewForbidden, match="written or edited by you"):
        prompt.approve_review(ORG, review.review_id, BOB.user_id, "bob")


def test_the_owner_of_a_key_cannot_approve_what_the_key_did(prompt: Storage) -> None:
    prompt.create_version(ORG, "greeting", "by key", KEY, person=OWNER.user_id)
    requested = prompt.request_review(ORG, "greeting", "3", "production", KEY, person=OWNER.user_id)
    with pytest.raises(ReviewForbidden, match="requested with a key you own"):
        prompt.approve_review(ORG, requested.review_id, OWNER.user_id, "owner")
    # Requested by a person, written with the owner's key: the owner is its author.
    prompt.cancel_review(ORG, requested.review_id, OWNER.user_id)
    review = prompt.request_review(
        ORG, "greeting", "3", "production", ALICE.user_id, person=ALICE.user_id
    )
    with pytest.raises(ReviewForbidden, match="with a key you own"):
        prompt.approve_review(ORG, review.review_id, OWNER.user_id, "owner")
    with pytest.raises(ReviewForbidden, match="with a key you own"):
        prompt.reject_review(ORG, review.review_id, OWNER.user_id)
    decided, promotion = prompt.approve_review(ORG, review.review_id, BOB.user_id, "bob")
    assert decided.status == "applied" and promotion is not None


@pytest.mark.parametrize(
    ("change", "words"),
    [({"disabled": True}, "disabled"), ({"role": "Service Read"}, "Service Read")],
)
def test_a_disabled_or_demoted_user_cannot_approve(
    prompt: Storage, change: dict[str, object], words: str
) -> None:
    review = prompt.request_review(ORG, "greeting", "2", "production", ALICE.user_id)
    prompt.update_user(ORG, "bob", **change)  # type: ignore[arg-type]
    with pytest.raises(ReviewForbidden, match=words):
        prompt.approve_review(ORG, review.review_id, BOB.user_id, "bob")
    with pytest.raises(ReviewForbidden, match=words):
        prompt.reject_review(ORG, review.review_id, BOB.user_id)
    assert prompt.get_review(ORG, review.review_id).approvals == ()
    # Restored, the same person decides at once.
    prompt.update_user(ORG, "bob", disabled=False, role="Service Write")
    decided, _ = prompt.approve_review(ORG, review.review_id, BOB.user_id, "bob")
    assert decided.status == "applied"
