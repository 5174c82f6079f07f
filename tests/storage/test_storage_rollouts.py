"""Gradual rollouts on every backend: started, stepped, completed and aborted in atomic
steps with their history and events; what a rollout blocks and what ends it; the
environment read that carries it; reviews that start one."""

from __future__ import annotations

import pytest

from storage import (
    BreakingPromotion,
    EnvironmentNotFound,
    Event,
    InRollout,
    InvalidInput,
    LifecycleError,
    NoProductionVersion,
    NothingInEnvironment,
    ProductionChanged,
    PromptNotFound,
    PromptVersion,
    ReviewRequired,
    RolloutInProgress,
    RolloutNotFound,
    Storage,
    VersionFrozen,
    VersionNotFound,
)
from tests.clock import FakeClock

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
OTHER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e12"
ALICE = "a0000000-0000-4000-8000-000000000003"


@pytest.fixture
def prompt(storage: Storage) -> Storage:
    """Prompt "greeting" with drafts 1-4, version 1 in production and staging."""
    storage.create_prompt(ORG, "greeting")
    for i in range(4):
        storage.create_version(ORG, "greeting", f"c{i}", USER)
    storage.create_environment(ORG, "staging")
    storage.promote(ORG, "greeting", "1", USER)
    storage.promote(ORG, "greeting", "1", USER, environment="staging")
    return storage


def events_since(storage: Storage, before: str) -> list[Event]:
    return storage.events_after(ORG, before, 100)


def last_id(storage: Storage) -> str:
    found = storage.events_after(ORG, "0-0", 100_000)
    return found[-1].id if found else "0-0"


def served(storage: Storage, env: str = "production") -> PromptVersion | InRollout:
    return storage.read_environment(ORG, "greeting", env)


def test_start_keeps_the_environment_and_the_candidate_as_they_are(
    prompt: Storage, clock: FakeClock
) -> None:
    before = last_id(prompt)
    clock.advance(5)
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 10, USER, request_id="r1")
    version = prompt.get_version(ORG, "greeting", "2")
    assert rollout.rollout_id.startswith("ro_")
    assert rollout.to_json() == {
        "rollout_id": rollout.rollout_id,
        "prompt_id": version.prompt_id,
        "environment": "production",
        "baseline_version": 1,
        "candidate_version": 2,
        "percent": 10,
        "started_by": USER,
        "started_at": "2026-01-02T03:04:10.678901Z",
        "updated_at": "2026-01-02T03:04:10.678901Z",
    }
    assert rollout.candidate_id == version.version_id
    # Nothing moved: production is still 1, the candidate still a draft, no history.
    assert prompt.get_production(ORG, "greeting").version == 1
    assert version.status == "draft"
    assert len(prompt.list_history(ORG, "greeting").items) == 2
    assert prompt.get_rollout(ORG, "greeting", "production") == rollout
    assert prompt.get_rollout(ORG, version.prompt_id, "production") == rollout
    assert prompt.list_rollouts(ORG, "greeting") == [rollout]
    [event] = events_since(prompt, before)
    assert event.to_json() | {"id": None} == {
        "id": None,
        "type": "rollout.started",
        "prompt_id": version.prompt_id,
        "prompt_name": "greeting",
        "version": 2,
        "version_id": version.version_id,
        "status": "draft",
        "previous_version": 1,
        "actor": USER,
        "at": "2026-01-02T03:04:10.678901Z",
        "request_id": "r1",
        "environment": "production",
        "review_id": None,
        "rollout_id": rollout.rollout_id,
        "percent": 10,
        "reason": None,
        "guard": None,
    }


def test_the_environment_read_carries_the_rollout(prompt: Storage) -> None:
    plain = served(prompt)
    assert isinstance(plain, PromptVersion) and plain.version == 1
    assert prompt.read_environment(ORG, "greeting", "staging") == plain
    rollout = prompt.start_rollout(ORG, "greeting", "3", "staging", 40, USER)
    read = served(prompt, "staging")
    assert isinstance(read, InRollout)
    assert read.baseline == prompt.get_version(ORG, "greeting", "1")
    assert read.candidate == prompt.get_version(ORG, "greeting", "3")
    assert read.rollout == rollout
    body = read.to_json()
    assert body["version"] == 1
    assert body["rollout"] == {
        "rollout_id": rollout.rollout_id,
        "percent": 40,
        "candidate": read.candidate.to_json(),
    }
    assert read.to_json(candidate=True)["version"] == 3
    assert read.to_json(candidate=True)["rollout"] == body["rollout"]
    # Production has no rollout: its read is the version alone.
    assert isinstance(served(prompt), PromptVersion)
    # The other reads do not change.
    assert prompt.get_in_environment(ORG, "greeting", "staging").version == 1


def test_read_errors_are_those_of_an_environment_read(prompt: Storage) -> None:
    prompt.create_prompt(ORG, "empty")
    with pytest.raises(PromptNotFound):
        prompt.read_environment(ORG, "nope", "production")
    with pytest.raises(EnvironmentNotFound):
        prompt.read_environment(ORG, "greeting", "nope")
    with pytest.raises(NoProductionVersion):
        prompt.read_environment(ORG, "empty", "production")
    with pytest.raises(NothingInEnvironment):
        prompt.read_environment(ORG, "empty", "staging")


def test_start_is_refused_as_a_promotion_would_be(prompt: Storage) -> None:
    before = last_id(prompt)
    with pytest.raises(PromptNotFound):
        prompt.start_rollout(ORG, "nope", "2", "production", 10, USER)
    with pytest.raises(VersionNotFound):
        prompt.start_rollout(ORG, "greeting", "9", "production", 10, USER)
    with pytest.raises(EnvironmentNotFound):
        prompt.start_rollout(ORG, "greeting", "2", "nope", 10, USER)
    for bad in (0, 100, -5):
        with pytest.raises(InvalidInput):
            prompt.start_rollout(ORG, "greeting", "2", "production", bad, USER)
    # The production version is not a draft; staging holds version 1 already.
    with pytest.raises(LifecycleError, match="only a draft"):
        prompt.start_rollout(ORG, "greeting", "1", "production", 10, USER)
    with pytest.raises(LifecycleError, match="in this environment already"):
        prompt.start_rollout(ORG, "greeting", "1", "staging", 10, USER)
    prompt.archive_version(ORG, "greeting", "4")
    before = last_id(prompt)
    with pytest.raises(LifecycleError, match="archived"):
        prompt.start_rollout(ORG, "greeting", "4", "staging", 10, USER)
    with pytest.raises(ProductionChanged) as changed:
        prompt.start_rollout(ORG, "greeting", "2", "production", 10, USER, expected=3)
    assert changed.value.current == 1
    assert events_since(prompt, before) == []
    assert prompt.list_rollouts(ORG, "greeting") == []
    guarded = prompt.start_rollout(ORG, "greeting", "2", "production", 10, USER, expected=1)
    assert guarded.baseline_version == 1


def test_a_rollout_needs_a_baseline(prompt: Storage) -> None:
    prompt.create_environment(ORG, "qa")
    with pytest.raises(LifecycleError, match="holds no version") as refused:
        prompt.start_rollout(ORG, "greeting", "2", "qa", 10, USER)
    assert "promote version 2 instead" in str(refused.value)


def test_a_protected_environment_needs_a_review(prompt: Storage) -> None:
    prompt.update_environment(ORG, "production", required_approvals=1)
    with pytest.raises(ReviewRequired):
        prompt.start_rollout(ORG, "greeting", "2", "production", 10, USER)


def test_one_rollout_per_prompt_and_environment(prompt: Storage) -> None:
    first = prompt.start_rollout(ORG, "greeting", "2", "production", 10, USER)
    with pytest.raises(RolloutInProgress) as busy:
        prompt.start_rollout(ORG, "greeting", "3", "production", 20, USER)
    assert busy.value.rollout_id == first.rollout_id
    assert first.rollout_id in str(busy.value)
    # Another environment, or another prompt, has its own.
    second = prompt.start_rollout(ORG, "greeting", "2", "staging", 20, USER)
    assert [r.environment for r in prompt.list_rollouts(ORG, "greeting")] == [
        "production",
        "staging",
    ]
    assert second.rollout_id != first.rollout_id


def test_set_percent(prompt: Storage, clock: FakeClock) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 5, USER)
    before = last_id(prompt)
    clock.advance(60)
    stepped = prompt.set_rollout_percent(
        ORG, "greeting", "production", 25, actor=OTHER, request_id="r2"
    )
    assert stepped.percent == 25
    assert stepped.started_at == rollout.started_at
    assert stepped.updated_at == clock.utc()
    assert (stepped.rollout_id, stepped.started_by) == (rollout.rollout_id, USER)
    assert prompt.get_rollout(ORG, "greeting", "production") == stepped
    [event] = events_since(prompt, before)
    assert (event.type, event.percent, event.rollout_id, event.actor, event.request_id) == (
        "rollout.updated",
        25,
        rollout.rollout_id,
        OTHER,
        "r2",
    )
    assert (event.version, event.previous_version) == (2, 1)
    # Down is allowed too; 0 and 100 are not percents of a rollout.
    assert prompt.set_rollout_percent(ORG, "greeting", "production", 1).percent == 1
    for bad in (0, 100):
        with pytest.raises(InvalidInput):
            prompt.set_rollout_percent(ORG, "greeting", "production", bad)
    guarded = prompt.set_rollout_percent(
        ORG, "greeting", "production", 50, rollout_id=rollout.rollout_id
    )
    assert guarded.percent == 50
    with pytest.raises(RolloutNotFound):
        prompt.set_rollout_percent(ORG, "greeting", "production", 60, rollout_id="ro_other")
    with pytest.raises(RolloutNotFound):
        prompt.set_rollout_percent(ORG, "greeting", "staging", 60)
    assert prompt.get_rollout(ORG, "greeting", "production").percent == 50


def test_complete_in_production(prompt: Storage, clock: FakeClock) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 30, USER)
    before = last_id(prompt)
    clock.advance(60)
    done = prompt.complete_rollout(
        ORG, "greeting", "production", OTHER, notes="all good", request_id="r3"
    )
    assert done.version.version == 2
    assert done.version.status == "published"
    assert done.version.promoted_by == OTHER
    assert done.record.to_json() | {"history_id": None} == {
        "history_id": None,
        "prompt_id": rollout.prompt_id,
        "version_number": 2,
        "promoted_by": OTHER,
        "promoted_at": "2026-01-02T03:05:05.678901Z",
        "previous_version": 1,
        "notes": "all good",
        "environment": "production",
        "review_id": None,
        "approved_by": [],
        "breaking": False,
        "rollout_id": rollout.rollout_id,
    }
    assert prompt.list_history(ORG, "greeting").items[0] == done.record
    assert prompt.get_production(ORG, "greeting").version == 2
    assert prompt.get_version(ORG, "greeting", "1").status == "archived"
    promoted, completed = events_since(prompt, before)
    assert (promoted.type, promoted.rollout_id, promoted.previous_version) == (
        "version.promoted",
        rollout.rollout_id,
        1,
    )
    assert (completed.type, completed.rollout_id, completed.percent, completed.status) == (
        "rollout.completed",
        rollout.rollout_id,
        30,
        "published",
    )
    assert (completed.actor, completed.request_id, completed.environment) == (
        OTHER,
        "r3",
        "production",
    )
    assert prompt.list_rollouts(ORG, "greeting") == []
    with pytest.raises(RolloutNotFound):
        prompt.get_rollout(ORG, "greeting", "production")
    read = served(prompt)
    assert isinstance(read, PromptVersion) and read.version == 2
    # Completed: a second completion or an abort finds nothing.
    with pytest.raises(RolloutNotFound):
        prompt.complete_rollout(ORG, "greeting", "production", USER)
    with pytest.raises(RolloutNotFound):
        prompt.abort_rollout(ORG, "greeting", "production")


def test_complete_may_keep_the_baseline_as_a_draft(prompt: Storage) -> None:
    prompt.start_rollout(ORG, "greeting", "2", "production", 30, USER)
    prompt.complete_rollout(ORG, "greeting", "production", USER, archive_previous=False)
    assert prompt.get_version(ORG, "greeting", "1").status == "draft"


def test_complete_in_another_environment(prompt: Storage) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "3", "staging", 50, USER)
    done = prompt.complete_rollout(ORG, "greeting", "staging", USER, rollout_id=rollout.rollout_id)
    assert done.record.environment == "staging"
    assert done.record.rollout_id == rollout.rollout_id
    assert prompt.get_in_environment(ORG, "greeting", "staging").version == 3
    assert prompt.get_version(ORG, "greeting", "3").status == "draft"
    assert prompt.get_version(ORG, "greeting", "3").environments == ["staging"]
    assert prompt.get_version(ORG, "greeting", "1").environments == ["production"]


def test_complete_with_another_rollout_id_changes_nothing(prompt: Storage) -> None:
    prompt.start_rollout(ORG, "greeting", "2", "production", 30, USER)
    with pytest.raises(RolloutNotFound):
        prompt.complete_rollout(ORG, "greeting", "production", USER, rollout_id="ro_0")
    assert prompt.get_production(ORG, "greeting").version == 1


def test_abort_leaves_the_baseline(prompt: Storage, clock: FakeClock) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 30, USER)
    before = last_id(prompt)
    clock.advance(1)
    ended = prompt.abort_rollout(ORG, "greeting", "production", actor=OTHER, request_id="r4")
    assert ended.rollout_id == rollout.rollout_id
    assert ended.updated_at == clock.utc()
    assert ended.percent == 30
    [event] = events_since(prompt, before)
    assert (event.type, event.rollout_id, event.actor, event.version, event.status) == (
        "rollout.aborted",
        rollout.rollout_id,
        OTHER,
        2,
        "draft",
    )
    assert prompt.get_production(ORG, "greeting").version == 1
    assert prompt.get_version(ORG, "greeting", "2").status == "draft"
    assert len(prompt.list_history(ORG, "greeting").items) == 2
    assert isinstance(served(prompt), PromptVersion)
    with pytest.raises(RolloutNotFound):
        prompt.abort_rollout(ORG, "greeting", "production")
    # A new rollout may start, with a new id.
    again = prompt.start_rollout(ORG, "greeting", "2", "production", 5, USER)
    assert again.rollout_id != rollout.rollout_id


def test_a_rollout_blocks_other_ways_into_its_environment(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "2", USER, environment="staging")
    rollout = prompt.start_rollout(ORG, "greeting", "3", "staging", 30, USER)
    before = last_id(prompt)
    with pytest.raises(RolloutInProgress, match="before promoting") as busy:
        prompt.promote(ORG, "greeting", "4", USER, environment="staging")
    assert busy.value.rollout_id == rollout.rollout_id
    with pytest.raises(RolloutInProgress, match="before rolling"):
        prompt.rollback(ORG, "greeting", USER, environment="staging")
    with pytest.raises(RolloutInProgress):
        prompt.promote(ORG, "greeting", "3", USER, environment="staging")
    assert events_since(prompt, before) == []
    assert prompt.get_in_environment(ORG, "greeting", "staging").version == 2
    # Other environments are free, the candidate included.
    prompt.promote(ORG, "greeting", "3", USER)
    assert prompt.get_production(ORG, "greeting").version == 3
    prompt.rollback(ORG, "greeting", USER)
    assert prompt.get_production(ORG, "greeting").version == 1
    assert prompt.get_rollout(ORG, "greeting", "staging") == rollout


def test_the_candidate_keeps_its_content(prompt: Storage) -> None:
    prompt.start_rollout(ORG, "greeting", "2", "production", 30, USER)
    with pytest.raises(VersionFrozen):
        prompt.edit_version(ORG, "greeting", "2", "changed")
    assert prompt.get_version(ORG, "greeting", "2").content == "c1"
    assert prompt.edit_version(ORG, "greeting", "3", "changed").content == "changed"
    # Once a candidate, always frozen: an aborted rollout leaves it as it was.
    prompt.abort_rollout(ORG, "greeting", "production")
    with pytest.raises(VersionFrozen):
        prompt.edit_version(ORG, "greeting", "2", "changed")


@pytest.mark.parametrize("change", ["archive", "delete"])
def test_archiving_or_deleting_the_candidate_aborts(prompt: Storage, change: str) -> None:
    rollout = prompt.start_rollout(ORG, "greeting", "2", "production", 30, USER)
    before = last_id(prompt)
    if change == "archive":
        prompt.archive_version(ORG, "greeting", "2", actor=OTHER, request_id="r5")
    else:
        prompt.delete_version(ORG, "greeting", "2", actor=OTHER, request_id="r5")
    kinds = [(e.type, e.rollout_id, e.actor, e.request_id) for e in events_since(prompt, before)]
    assert ("rollout.aborted", rollout.rollout_id, OTHER, "r5") in kinds
    assert f"version.{change}d" in [kind for kind, *_ in kinds]
    assert prompt.list_rollouts(ORG, "greeting") == []
    assert isinstance(served(prompt), PromptVersion)


@pytest.mark.parametrize("change", ["archive", "delete"])
def test_archiving_or_deleting_the_baseline_aborts(prompt: Storage, change: str) -> None:
    prompt.promote(ORG, "greeting", "2", USER, environment="staging")
    rollout = prompt.start_rollout(ORG, "greeting", "3", "staging", 30, USER)
    before = last_id(prompt)
    if change == "archive":
        prompt.archive_version(ORG, "greeting", "2")
    else:
        prompt.delete_version(ORG, "greeting", "2")
    aborted = [e for e in events_since(prompt, before) if e.type == "rollout.aborted"]
    assert [e.rollout_id for e in aborted] == [rollout.rollout_id]
    assert prompt.list_rollouts(ORG, "greeting") == []
    with pytest.raises(NothingInEnvironment):
        served(prompt, "staging")


def test_deleting_the_environment_aborts_its_rollouts(prompt: Storage) -> None:
    prompt.create_prompt(ORG, "other")
    prompt.create_version(ORG, "other", "o1", USER)
    prompt.create_version(ORG, "other", "o2", USER)
    prompt.promote(ORG, "other", "1", USER, environment="staging")
    first = prompt.start_rollout(ORG, "greeting", "2", "staging", 30, USER)
    second = prompt.start_rollout(ORG, "other", "2", "staging", 30, USER)
    kept = prompt.start_rollout(ORG, "greeting", "3", "production", 30, USER)
    before = last_id(prompt)
    prompt.delete_environment(ORG, "staging", actor=OTHER, request_id="r6")
    aborted = {(e.rollout_id, e.actor, e.request_id) for e in events_since(prompt, before)}
    assert aborted == {(first.rollout_id, OTHER, "r6"), (second.rollout_id, OTHER, "r6")}
    assert prompt.list_rollouts(ORG, "greeting") == [kept]
    assert prompt.list_rollouts(ORG, "other") == []
    # A new environment of the same name starts empty.
    prompt.create_environment(ORG, "staging")
    with pytest.raises(RolloutNotFound):
        prompt.get_rollout(ORG, "greeting", "staging")


def test_deleting_the_prompt_drops_its_rollouts(prompt: Storage) -> None:
    prompt.start_rollout(ORG, "greeting", "2", "production", 30, USER)
    prompt.delete_prompt(ORG, "greeting")
    with pytest.raises(PromptNotFound):
        prompt.get_rollout(ORG, "greeting", "production")
    prompt.create_prompt(ORG, "greeting")
    assert prompt.list_rollouts(ORG, "greeting") == []


def test_lookups(prompt: Storage) -> None:
    with pytest.raises(PromptNotFound):
        prompt.get_rollout(ORG, "nope", "production")
    with pytest.raises(PromptNotFound):
        prompt.list_rollouts(ORG, "nope")
    with pytest.raises(EnvironmentNotFound):
        prompt.get_rollout(ORG, "greeting", "nope")
    with pytest.raises(RolloutNotFound, match="no rollout in environment 'production'"):
        prompt.get_rollout(ORG, "greeting", "production")
    with pytest.raises(RolloutNotFound):
        prompt.abort_rollout(ORG, "greeting", "production")
    with pytest.raises(PromptNotFound):
        prompt.get_rollout("other-org", "greeting", "production")


# --------------------------------------------------------------------------- contracts


@pytest.fixture
def contracted(storage: Storage) -> Storage:
    """Prompt "contracted": v1 "Hi {{name}}" in production; v2 also requires count (a
    breaking change against v1); v3 keeps v1's contract."""
    storage.create_prompt(ORG, "contracted")
    storage.create_version(ORG, "contracted", "Hi {{name}}", USER, variables=["name"])
    storage.create_version(
        ORG, "contracted", "Hi {{name}} x{{count}}", USER, variables=["name", "count"]
    )
    storage.create_version(ORG, "contracted", "Hello {{name}}", USER, variables=["name"])
    storage.promote(ORG, "contracted", "1", USER)
    return storage


def test_a_breaking_start_needs_allow_breaking(contracted: Storage) -> None:
    before = last_id(contracted)
    with pytest.raises(BreakingPromotion) as refused:
        contracted.start_rollout(ORG, "contracted", "2", "production", 10, USER)
    assert [(c.variable, c.change) for c in refused.value.changes] == [("count", "newly_required")]
    assert events_since(contracted, before) == []
    with pytest.raises(InvalidInput):  # an acknowledgement says why
        contracted.start_rollout(
            ORG, "contracted", "2", "production", 10, USER, allow_breaking=True
        )
    started = contracted.start_rollout(
        ORG, "contracted", "2", "production", 10, USER, allow_breaking=True, notes="ok"
    )
    assert started.candidate_version == 2
    # A start that breaks nothing needs no acknowledgement.
    contracted.abort_rollout(ORG, "contracted", "production")
    contracted.start_rollout(ORG, "contracted", "3", "production", 10, USER)


def test_a_breaking_completion_needs_allow_breaking(contracted: Storage) -> None:
    rollout = contracted.start_rollout(
        ORG, "contracted", "2", "production", 10, USER, allow_breaking=True, notes="ok"
    )
    before = last_id(contracted)
    with pytest.raises(BreakingPromotion):
        contracted.complete_rollout(ORG, "contracted", "production", USER)
    assert events_since(contracted, before) == []
    assert contracted.get_rollout(ORG, "contracted", "production") == rollout
    with pytest.raises(InvalidInput):
        contracted.complete_rollout(ORG, "contracted", "production", USER, allow_breaking=True)
    done = contracted.complete_rollout(
        ORG, "contracted", "production", USER, notes="callers updated", allow_breaking=True
    )
    assert (done.record.breaking, done.record.rollout_id) == (True, rollout.rollout_id)
    assert contracted.get_production(ORG, "contracted").version == 2


def test_a_completion_that_breaks_nothing_is_not_breaking(contracted: Storage) -> None:
    contracted.start_rollout(ORG, "contracted", "3", "production", 10, USER)
    done = contracted.complete_rollout(ORG, "contracted", "production", USER)
    assert done.record.breaking is False


def test_a_review_with_a_percent_is_checked_like_a_start(contracted: Storage) -> None:
    contracted.update_environment(ORG, "production", required_approvals=1)
    with pytest.raises(BreakingPromotion):
        contracted.request_review(ORG, "contracted", "2", "production", OTHER, rollout_percent=5)
    review = contracted.request_review(
        ORG,
        "contracted",
        "2",
        "production",
        OTHER,
        notes="ok",
        rollout_percent=5,
        allow_breaking=True,
    )
    _, applied = contracted.approve_review(ORG, review.review_id, ALICE, "alice")
    assert applied == contracted.get_rollout(ORG, "contracted", "production")


# --------------------------------------------------------------------------- reviews


@pytest.fixture
def protected(prompt: Storage) -> Storage:
    prompt.update_environment(ORG, "production", required_approvals=1)
    return prompt


def test_a_review_with_a_percent_starts_a_rollout(protected: Storage) -> None:
    review = protected.request_review(
        ORG, "greeting", "2", "production", OTHER, notes="try it", rollout_percent=10
    )
    assert review.rollout_percent == 10
    before = last_id(protected)
    decided, applied = protected.approve_review(ORG, review.review_id, ALICE, "alice")
    assert decided.status == "applied"
    rollout = protected.get_rollout(ORG, "greeting", "production")
    assert applied == rollout
    assert (rollout.candidate_version, rollout.baseline_version, rollout.percent) == (2, 1, 10)
    assert rollout.started_by == ALICE
    kinds = [e.type for e in events_since(protected, before)]
    assert kinds == ["review.approved", "rollout.started", "review.applied"]
    assert protected.get_production(ORG, "greeting").version == 1
    # Stepping and completing need no review.
    protected.set_rollout_percent(ORG, "greeting", "production", 50)
    done = protected.complete_rollout(ORG, "greeting", "production", OTHER)
    assert done.record.rollout_id == rollout.rollout_id
    assert protected.get_production(ORG, "greeting").version == 2


def test_a_review_with_a_percent_needs_a_baseline(protected: Storage) -> None:
    protected.create_environment(ORG, "qa", 1)
    with pytest.raises(LifecycleError, match="holds no version"):
        protected.request_review(ORG, "greeting", "2", "qa", OTHER, rollout_percent=10)
    with pytest.raises(InvalidInput):
        protected.request_review(ORG, "greeting", "2", "production", OTHER, rollout_percent=100)


def test_a_review_is_not_applied_while_a_rollout_runs(protected: Storage) -> None:
    first = protected.request_review(ORG, "greeting", "2", "production", OTHER, rollout_percent=5)
    second = protected.request_review(ORG, "greeting", "3", "production", OTHER)
    protected.approve_review(ORG, first.review_id, ALICE, "alice")
    before = last_id(protected)
    with pytest.raises(RolloutInProgress):
        protected.approve_review(ORG, second.review_id, ALICE, "alice")
    assert events_since(protected, before) == []
    assert protected.get_review(ORG, second.review_id).status == "open"
    assert protected.get_production(ORG, "greeting").version == 1
