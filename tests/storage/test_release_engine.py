"""The release engine (storage/release) case by case, without a backend: a State in, a
Change or a refusal out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from identity.roles import ROLES, SERVICE_WRITE, role_includes
from storage import (
    AlreadyApproved,
    BreakingPromotion,
    EnvironmentNotFound,
    InUse,
    InvalidInput,
    LifecycleError,
    NoRollbackTarget,
    ProductionChanged,
    ReviewClosed,
    ReviewExists,
    ReviewForbidden,
    ReviewRequired,
    ReviewStale,
    RolloutInProgress,
    RolloutNotFound,
    VersionFrozen,
    lifecycle,
    release,
)
from storage.identity_records import User
from storage.records import (
    PRODUCTION,
    Approval,
    Environment,
    Promotion,
    PromotionRecord,
    Prompt,
    PromptVersion,
    Review,
    Rollout,
)
from storage.release import Actor, State
from storage.release.records import NoNeighbours

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
THEN = datetime(2026, 1, 1, tzinfo=UTC)
PROMPT = Prompt("pmt_1", "greeting", "text", None, THEN, THEN, None, None)
ALICE, BOB, CAROL = "u-alice", "u-bob", "u-carol"
STAGING = Environment("staging", 0, None, THEN)
GUARDED = Environment("guarded", 1, None, THEN)


def version(number: int, status: str = "draft", **fields: Any) -> PromptVersion:
    base = PromptVersion(
        prompt_id="pmt_1",
        version_id=f"v_{number}",
        name="greeting",
        version=number,
        content=f"content {number}",
        variables=(),
        status=status,
        prompt_type="text",
        metadata={},
        tags=(),
        created_at=THEN,
        updated_at=THEN,
        promoted_at=THEN if status == "published" else None,
        promoted_by=None,
        created_by=ALICE,
        authors=(ALICE,),
    )
    return replace(base, **fields)


def state(*versions: PromptVersion, **fields: Any) -> State:
    defaults: dict[str, Any] = {
        "prompt": PROMPT,
        "versions": {v.version: v for v in versions},
        "placements": {},
        "environments": {"staging": STAGING, "guarded": GUARDED},
    }
    return State(**{**defaults, **fields})


def record(number: int, environment: str = PRODUCTION) -> PromotionRecord:
    return PromotionRecord(f"h_{number}", "pmt_1", number, ALICE, THEN, None, None, environment)


def review(number: int = 2, **fields: Any) -> Review:
    base = Review(
        review_id="rv_1",
        prompt_id="pmt_1",
        prompt_name="greeting",
        version=number,
        version_id=f"v_{number}",
        environment="guarded",
        status="open",
        requested_by=ALICE,
        requested_at=THEN,
        notes=None,
        expected_version=None,
        required_approvals=1,
        approvals=(),
        rejected_by=None,
        decided_at=None,
        rollout_percent=None,
        version_author=ALICE,
    )
    return replace(base, **fields)


def rollout(candidate: int = 2, baseline: int = 1, environment: str = PRODUCTION) -> Rollout:
    return Rollout("ro_1", "pmt_1", environment, baseline, candidate, "v_2", 30, ALICE, THEN, THEN)


def ask(kind: type[release.Request], who: str | None = ALICE, **fields: Any) -> Any:
    return kind(now=NOW, actor=Actor(who, who), request_id="r1", **fields)  # type: ignore[call-arg]


def approve(who: str = BOB) -> release.ApproveReview:
    return ask(release.ApproveReview, who, review_id="rv_1", username="bob")  # type: ignore[no-any-return]


def types(change: release.Change) -> list[str]:
    return [event.type for event in change.events]


# ----------------------------------------------------------------------- promotion


def test_promotion_into_production_publishes_freezes_and_records() -> None:
    held = state(version(1, "published", frozen=True), version(2), placements={PRODUCTION: 1})
    change = release.decide(held, ask(release.Promote, version=2, notes="go"))
    assert change.versions == {
        1: {"status": "archived", "updated_at": NOW},
        2: {
            "status": "published",
            "updated_at": NOW,
            "promoted_at": NOW,
            "promoted_by": ALICE,
            "frozen": True,
        },
    }
    assert change.placements == {PRODUCTION: 2} and change.touched
    [history] = change.history
    assert (history.version_number, history.previous_version, history.notes) == (2, 1, "go")
    [event] = change.events
    assert (event.type, event.version, event.status, event.previous_version, event.id) == (
        "version.promoted",
        2,
        "published",
        1,
        "",
    )
    assert isinstance(change.answer, Promotion) and change.answer.record == history


def test_placement_elsewhere_keeps_the_status_and_mirrors_placements() -> None:
    held = state(
        version(1, placements=("staging",), frozen=True), version(2), placements={"staging": 1}
    )
    change = release.decide(held, ask(release.Promote, version=2, environment="staging"))
    assert change.versions == {
        1: {"placements": ()},
        2: {"placements": ("staging",), "frozen": True},
    }
    assert change.placements == {"staging": 2}
    assert change.events[0].environment == "staging"


def test_refusals_come_in_the_order_of_section_24() -> None:
    # An archived version, a rollout there, a wrong guard and a protected environment:
    # the version's status answers first, then the rollout, then the guard, then the
    # protection.
    busy = {"guarded": rollout(environment="guarded")}
    archived = state(version(1, "archived"), version(2), placements={"guarded": 2}, rollouts=busy)
    promote = ask(release.Promote, version=1, environment="guarded", expected=7)
    with pytest.raises(LifecycleError) as caught:
        release.decide(archived, promote)
    assert (caught.value.reason, caught.value.extras()) == ("status", {"status": "archived"})
    drafts = replace(archived, versions={1: version(1), 2: version(2)})
    with pytest.raises(RolloutInProgress):
        release.decide(drafts, promote)
    quiet = replace(drafts, rollouts={})
    with pytest.raises(LifecycleError) as here:
        release.decide(quiet, replace(promote, version=2))
    assert here.value.reason == "already_there"
    with pytest.raises(ProductionChanged) as moved:
        release.decide(quiet, promote)
    assert moved.value.extras() == {"current_version": 2}
    with pytest.raises(ReviewRequired):
        release.decide(quiet, replace(promote, expected=2))


def test_breaking_comes_last_and_needs_notes_to_pass() -> None:
    schema = {"n": {"type": "integer"}}
    old = version(1, "published", variables=("n",), variables_schema=schema, content="{{n}}")
    new = version(2, variables=("n",), variables_schema={"n": {"type": "string"}}, content="{{n}}")
    held = state(old, new, placements={PRODUCTION: 1})
    with pytest.raises(BreakingPromotion) as caught:
        release.decide(held, ask(release.Promote, version=2))
    assert caught.value.reason == "breaking_change" and caught.value.extras()["changes"]
    with pytest.raises(InvalidInput):
        release.decide(held, ask(release.Promote, version=2, allow_breaking=True))
    change = release.decide(held, ask(release.Promote, version=2, allow_breaking=True, notes="ok"))
    assert change.history[0].breaking is True


def test_an_unknown_environment_is_not_found() -> None:
    with pytest.raises(EnvironmentNotFound):
        release.decide(state(version(1)), ask(release.Promote, version=1, environment="nope"))


# ----------------------------------------------------------------------- rollback


def test_rollback_walks_the_line_into_a_protected_environment() -> None:
    held = state(
        version(1, placements=(), frozen=True),
        version(2, placements=("guarded",), frozen=True),
        placements={"guarded": 2},
        history=[record(1, "guarded"), record(2, "guarded"), record(5)],
    )
    change = release.decide(held, ask(release.Rollback, environment="guarded"))
    assert change.placements == {"guarded": 1}
    assert change.history[0].notes == lifecycle.rollback_notes(1)
    assert change.history[0].breaking is False


def test_rollback_refusals_carry_their_reason() -> None:
    held = state(version(1, "published"), placements={PRODUCTION: 1}, history=[record(1)])
    with pytest.raises(NoRollbackTarget) as caught:
        release.decide(held, ask(release.Rollback))
    assert (caught.value.why, caught.value.reason) == ("first", "nothing_to_roll_back")
    with pytest.raises(NoRollbackTarget) as current:
        release.decide(held, ask(release.Rollback, to_version=1))
    assert current.value.reason == "already_there"


# ----------------------------------------------------------------------- reviews


def test_a_review_records_the_digest_and_the_person() -> None:
    held = state(version(1, "published"), version(2), placements={PRODUCTION: 1})
    request = release.RequestReview(
        now=NOW, actor=Actor("key", ALICE), version=2, environment="guarded", notes="n"
    )
    change = release.decide(held, request)
    [new] = change.new_reviews
    assert new.content_digest == release.content_digest(version(2))
    assert (new.requested_by, new.requested_by_person, new.expected_version) == ("key", ALICE, None)
    assert types(change) == ["review.requested"] and change.answer == new
    with pytest.raises(ReviewExists) as caught:
        release.decide(replace(held, reviews={"rv_1": review()}), request)
    assert caught.value.extras() == {"review_id": "rv_1"}


def test_the_digest_covers_content_schema_and_examples() -> None:
    base = version(1)
    digests = {
        release.content_digest(base),
        release.content_digest(replace(base, content="other")),
        release.content_digest(replace(base, variables_schema={})),
        release.content_digest(replace(base, examples=({"name": None, "variables": {}},))),
    }
    assert len(digests) == 4
    assert release.content_digest(replace(base, tags=("x",), updated_at=NOW)) in digests


def open_review(**fields: Any) -> State:
    digest = release.content_digest(version(2))
    pending = review(content_digest=digest, **fields)
    return state(version(1), version(2), reviews={"rv_1": pending})


def test_the_last_approval_applies_the_review() -> None:
    change = release.decide(open_review(), approve())
    applied, promotion = change.answer
    assert applied.status == "applied" and applied.approvals[0].user_id == BOB
    assert promotion.record.approved_by == (BOB,) and change.placements == {"guarded": 2}
    assert types(change) == ["review.approved", "version.promoted", "review.applied"]


def test_an_approval_short_of_the_number_only_records_itself() -> None:
    change = release.decide(
        open_review(required_approvals=2),
        approve(),
    )
    assert change.answer == (change.reviews[0], None) and change.reviews[0].status == "open"
    assert types(change) == ["review.approved"] and not change.placements


def test_a_moved_environment_makes_the_review_stale_and_fails_after_writing() -> None:
    moved = replace(open_review(), placements={"guarded": 1})
    change = release.decide(moved, approve())
    assert isinstance(change.refusal, ReviewStale)
    assert change.refusal.extras() == {"current_version": 1, "review_id": "rv_1"}
    assert [r.status for r in change.reviews] == ["stale"] and not change.placements


def test_content_that_is_not_what_was_reviewed_is_not_applied() -> None:
    edited = replace(open_review(), versions={1: version(1), 2: version(2, content="edited")})
    change = release.decide(edited, approve())
    assert isinstance(change.refusal, ReviewStale) and "content_digest" in str(change.refusal)
    assert change.reviews[0].status == "stale" and not change.placements


@pytest.mark.parametrize(
    ("actor", "fields", "words"),
    [
        (Actor(ALICE, ALICE), {}, "you requested"),
        (Actor(BOB, BOB), {"requested_by": "key", "requested_by_person": BOB}, "a key you own"),
        (Actor(BOB, BOB), {"version_author": BOB}, "you wrote version 2"),
    ],
)
def test_people_who_may_not_decide(actor: Actor, fields: dict[str, Any], words: str) -> None:
    for kind in (release.ApproveReview, release.RejectReview):
        extra = {"username": "x"} if kind is release.ApproveReview else {}
        request = kind(now=NOW, actor=actor, review_id="rv_1", **extra)  # type: ignore[call-arg]
        with pytest.raises(ReviewForbidden, match=words):
            release.decide(open_review(**fields), request)


def test_an_editor_or_a_key_owner_is_an_author() -> None:
    written = replace(open_review(), versions={2: version(2, authors=(ALICE, "key", BOB))})
    request = approve()
    with pytest.raises(ReviewForbidden, match="written or edited by you"):
        release.decide(written, request)


@pytest.mark.parametrize(
    ("record", "words"),
    [({"disabled": True}, "disabled"), ({"role": "Service Read"}, "Service Read")],
)
def test_the_approvers_stored_record_decides(record: dict[str, Any], words: str) -> None:
    stored = User("acme", BOB, "bob", SERVICE_WRITE, False, THEN, THEN, "hash")
    request = release.ApproveReview(
        now=NOW, actor=Actor(BOB, BOB, replace(stored, **record)), review_id="rv_1", username="b"
    )
    with pytest.raises(ReviewForbidden, match=words):
        release.decide(open_review(), request)
    fine = replace(request, actor=Actor(BOB, BOB, stored))
    assert release.decide(open_review(), fine).answer[0].status == "applied"


def test_deciding_roles_are_the_roles_that_include_service_write() -> None:
    assert tuple(r for r in ROLES if role_includes(r, SERVICE_WRITE)) == lifecycle.DECIDING_ROLES


def test_a_decided_review_or_a_second_approval_is_review_decided() -> None:
    closed = open_review(status="rejected")
    with pytest.raises(ReviewClosed) as caught:
        release.decide(closed, approve())
    assert caught.value.reason == "review_decided"
    approved = replace(
        open_review(required_approvals=2),
        reviews={"rv_1": replace(review(required_approvals=2), approvals=(_approval(BOB),))},
    )
    with pytest.raises(AlreadyApproved) as twice:
        release.decide(approved, approve())
    assert twice.value.reason == "review_decided"


def _approval(user_id: str) -> Approval:
    return Approval(user_id, "b", THEN, None)


def test_cancel_by_the_requester_its_person_or_an_admin() -> None:
    keyed = open_review(requested_by="key", requested_by_person=ALICE)
    change = release.decide(keyed, ask(release.CancelReview, ALICE, review_id="rv_1"))
    assert change.answer.status == "cancelled" and types(change) == ["review.cancelled"]
    with pytest.raises(ReviewForbidden, match="only the requester"):
        release.decide(keyed, ask(release.CancelReview, BOB, review_id="rv_1"))
    admin = ask(release.CancelReview, BOB, review_id="rv_1", admin=True)
    assert release.decide(keyed, admin).answer.status == "cancelled"


def test_rejection_closes_the_review() -> None:
    change = release.decide(
        open_review(), ask(release.RejectReview, BOB, review_id="rv_1", comment="no")
    )
    assert (change.answer.status, change.answer.rejected_by) == ("rejected", BOB)
    assert change.answer.rejection_comment == "no" and types(change) == ["review.rejected"]


# ----------------------------------------------------------------------- rollouts


def test_a_rollout_freezes_candidate_and_baseline() -> None:
    held = state(version(1, "published"), version(2), placements={PRODUCTION: 1})
    change = release.decide(held, ask(release.StartRollout, version=2, percent=30))
    assert change.versions == {2: {"frozen": True}, 1: {"frozen": True}}
    started = change.rollouts[PRODUCTION]
    assert started is not None and (started.baseline_version, started.percent) == (1, 30)
    assert types(change) == ["rollout.started"] and not change.placements


def test_a_rollout_needs_a_baseline_and_a_valid_percent() -> None:
    with pytest.raises(LifecycleError) as caught:
        release.decide(state(version(1)), ask(release.StartRollout, version=1, percent=30))
    assert caught.value.reason == "no_baseline"
    with pytest.raises(InvalidInput):
        release.decide(state(version(1)), ask(release.StartRollout, version=1, percent=100))


def test_percent_complete_and_abort() -> None:
    held = state(
        version(1, "published", frozen=True),
        version(2, frozen=True),
        placements={PRODUCTION: 1},
        rollouts={PRODUCTION: rollout()},
    )
    moved = release.decide(held, ask(release.SetPercent, percent=60))
    assert moved.answer.percent == 60 and types(moved) == ["rollout.updated"]
    done = release.decide(held, ask(release.CompleteRollout))
    assert done.rollouts == {PRODUCTION: None} and done.placements == {PRODUCTION: 2}
    assert types(done) == ["version.promoted", "rollout.completed"]
    assert done.history[0].rollout_id == "ro_1"
    aborted = release.decide(held, ask(release.AbortRollout))
    assert aborted.rollouts == {PRODUCTION: None} and types(aborted) == ["rollout.aborted"]
    with pytest.raises(RolloutNotFound):
        release.decide(held, ask(release.AbortRollout, rollout_id="ro_other"))


# ----------------------------------------------------------------------- versions


def test_edit_refuses_status_before_frozen_and_records_the_editor() -> None:
    with pytest.raises(LifecycleError) as caught:
        release.decide(
            state(version(1, "published", frozen=True)),
            ask(release.EditVersion, version=1, content="x"),
        )
    assert caught.value.reason == "status"
    with pytest.raises(VersionFrozen) as frozen:
        release.decide(
            state(version(1, frozen=True)), ask(release.EditVersion, version=1, content="x")
        )
    assert frozen.value.reason == "frozen"
    with pytest.raises(VersionFrozen):
        release.decide(open_review(), ask(release.EditVersion, version=2, content="x"))
    edit = release.EditVersion(now=NOW, actor=Actor("key", BOB), version=1, content="x")
    change = release.decide(state(version(1)), edit)
    assert change.versions[1]["authors"] == (ALICE, "key", BOB)
    assert types(change) == ["version.updated"] and change.answer.content == "x"


def test_archive_leaves_every_environment_and_ends_its_rollouts() -> None:
    held = state(
        version(1, "published"),
        version(2, placements=("staging",), frozen=True),
        placements={PRODUCTION: 1, "staging": 2},
        rollouts={PRODUCTION: rollout()},
    )
    change = release.decide(held, ask(release.ArchiveVersion, version=2))
    assert change.placements == {"staging": None} and change.rollouts == {PRODUCTION: None}
    assert types(change) == ["version.archived", "rollout.aborted"]
    assert change.versions[2]["status"] == "archived"


def test_unarchive_keeps_it_frozen_and_delete_goes() -> None:
    held = state(version(1, "archived", frozen=True))
    change = release.decide(held, ask(release.UnarchiveVersion, version=1))
    assert change.versions == {1: {"status": "draft", "updated_at": NOW}}
    assert change.answer.frozen is True
    deleted = release.decide(held, ask(release.DeleteVersion, version=1))
    assert deleted.deleted_version == 1 and types(deleted) == ["version.deleted"]
    assert deleted.events[0].status is None
    with pytest.raises(LifecycleError, match="promote another version before deleting"):
        release.decide(state(version(1, "published")), ask(release.DeleteVersion, version=1))


def test_leaving_an_environment_ends_what_it_held() -> None:
    held = state(
        version(1, "published"),
        version(2, placements=("guarded",), frozen=True),
        version(3),
        placements={PRODUCTION: 1, "guarded": 2},
        rollouts={"guarded": rollout(candidate=3, baseline=2, environment="guarded")},
        reviews={"rv_1": review(3)},
    )
    change = release.decide(held, ask(release.LeaveEnvironment, environment="guarded"))
    assert change.placements == {"guarded": None} and change.rollouts == {"guarded": None}
    assert change.versions == {2: {"placements": ()}}
    assert types(change) == ["rollout.aborted", "review.cancelled"]
    with pytest.raises(LifecycleError) as builtin:
        release.check_delete_environment({}, PRODUCTION)
    assert builtin.value.reason == "builtin"
    with pytest.raises(EnvironmentNotFound):
        release.check_delete_environment({}, "nope")


class _Includers(NoNeighbours):
    def __init__(self, *versions: PromptVersion) -> None:
        self.versions = versions

    def includers(self, name: str) -> tuple[PromptVersion, ...]:
        return tuple(v for v in self.versions if name in v.included_names)


def test_a_prompt_others_include_cannot_be_deleted() -> None:
    other = replace(version(1), prompt_id="pmt_2", name="other", content="{{> greeting@1}}")
    own = version(2, content="{{> greeting@1}}")  # including itself uses nothing of it
    with pytest.raises(InUse) as used:
        release.decide(state(neighbours=_Includers(other, own)), ask(release.DeletePrompt))
    assert used.value.reason == "in_use" and used.value.used_by == ["other"]
    change = release.decide(state(own, neighbours=_Includers(own)), ask(release.DeletePrompt))
    assert change.deleted_prompt and types(change) == ["prompt.deleted"]
    assert change.events[0].version is None and change.versions == {}
