"""Environments on every backend: the org's list, placements moved by promote and
rollback with ``environment``, guarded like production, archive and delete taking a
version out, and the history and events of each move."""

from __future__ import annotations

import pytest

from storage import (
    EnvironmentExists,
    EnvironmentNotFound,
    LifecycleError,
    NoProductionVersion,
    NoRollbackTarget,
    NothingInEnvironment,
    ProductionChanged,
    PromptNotFound,
    ReviewRequired,
    Storage,
)
from storage.lifecycle import environment_name_problem
from tests.clock import FakeClock

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


@pytest.fixture
def prompt(storage: Storage) -> Storage:
    """Prompt "greeting" with drafts 1-4 and environments staging and qa."""
    storage.create_prompt(ORG, "greeting")
    for i in range(4):
        storage.create_version(ORG, "greeting", f"c{i}", USER)
    storage.create_environment(ORG, "staging", description="pre-release")
    storage.create_environment(ORG, "qa")
    return storage


def placed(storage: Storage, env: str) -> int | None:
    try:
        return storage.get_in_environment(ORG, "greeting", env).version
    except (NothingInEnvironment, NoProductionVersion):
        return None


def environments_of(storage: Storage) -> dict[int, list[str]]:
    return {v.version: v.environments for v in storage.list_versions(ORG, "greeting").items}


def test_production_always_exists_and_others_are_listed_in_order(
    storage: Storage, clock: FakeClock
) -> None:
    assert [e.to_json() for e in storage.list_environments(ORG)] == [
        {"name": "production", "required_approvals": 0, "description": None, "created_at": None}
    ]
    made = storage.create_environment(ORG, "staging", 1, "pre-release")
    storage.create_environment(ORG, "qa")
    assert made.created_at == clock.utc()
    assert [e.name for e in storage.list_environments(ORG)] == ["production", "staging", "qa"]
    assert storage.get_environment(ORG, "staging") == made
    assert storage.list_environments("other-org")[0].name == "production"
    with pytest.raises(EnvironmentNotFound):
        storage.get_environment(ORG, "nope")


@pytest.mark.parametrize("name", ["staging", "production"])
def test_an_existing_name_is_refused(storage: Storage, name: str) -> None:
    storage.create_environment(ORG, "staging")
    with pytest.raises(EnvironmentExists):
        storage.create_environment(ORG, name)


def test_names_are_checked() -> None:
    assert environment_name_problem("staging-2") is None
    for bad in ["Staging", "2x", "a" * 33, "", "a_b", "a b"]:
        assert environment_name_problem(bad) is not None, bad
    assert "reserved" in (environment_name_problem("latest") or "")
    assert environment_name_problem("production") is None  # it exists: storage says so


def test_update_changes_what_is_given_production_too(storage: Storage) -> None:
    storage.create_environment(ORG, "staging", 0, "pre")
    changed = storage.update_environment(ORG, "staging", required_approvals=2)
    assert (changed.required_approvals, changed.description) == (2, "pre")
    cleared = storage.update_environment(ORG, "staging", description="")
    assert (cleared.required_approvals, cleared.description) == (2, None)
    production = storage.update_environment(ORG, "production", required_approvals=1)
    assert production.required_approvals == 1 and production.created_at is None
    assert storage.list_environments(ORG)[0] == production
    with pytest.raises(EnvironmentNotFound):
        storage.update_environment(ORG, "nope", required_approvals=1)


def test_promote_places_without_changing_status(prompt: Storage) -> None:
    done = prompt.promote(ORG, "greeting", "2", USER, notes="try", environment="staging")
    assert done.version.status == "draft" and done.version.environments == ["staging"]
    record = done.record
    assert (record.environment, record.version_number, record.previous_version) == (
        "staging",
        2,
        None,
    )
    assert (record.notes, record.review_id, record.approved_by) == ("try", None, ())
    assert placed(prompt, "staging") == 2 and placed(prompt, "production") is None
    assert prompt.get_prompt(ORG, "greeting").production_version is None
    # Another version replaces it; one version may sit in several environments.
    prompt.promote(ORG, "greeting", "3", USER, environment="staging")
    prompt.promote(ORG, "greeting", "3", USER, environment="qa")
    prompt.promote(ORG, "greeting", "3", USER)
    assert environments_of(prompt) == {4: [], 3: ["production", "qa", "staging"], 2: [], 1: []}
    assert prompt.get_in_environment(ORG, "greeting", "production").version == 3
    last = prompt.list_history(ORG, "greeting").items
    assert [(r.environment, r.version_number, r.previous_version) for r in last] == [
        ("production", 3, None),
        ("qa", 3, None),
        ("staging", 3, 2),
        ("staging", 2, None),
    ]


def test_promotion_events_carry_the_environment(prompt: Storage) -> None:
    before = prompt.event_log_bounds(ORG).newest or "0-0"
    prompt.promote(ORG, "greeting", "1", USER, environment="staging", request_id="r1")
    prompt.promote(ORG, "greeting", "2", USER, environment="staging")
    prompt.promote(ORG, "greeting", "2", USER)
    events = prompt.events_after(ORG, before, 10)
    assert [(e.type, e.environment, e.version, e.previous_version, e.status) for e in events] == [
        ("version.promoted", "staging", 1, None, "draft"),
        ("version.promoted", "staging", 2, 1, "draft"),
        ("version.promoted", "production", 2, None, "published"),
    ]
    assert events[0].to_json()["environment"] == "staging" and events[0].request_id == "r1"


def test_guard_is_the_environments_version(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", USER, environment="staging", expected_production=None)
    before = prompt.list_history(ORG, "greeting").items
    with pytest.raises(ProductionChanged) as refused:
        prompt.promote(ORG, "greeting", "2", USER, environment="staging", expected_production=None)
    assert (refused.value.current, refused.value.environment) == (1, "staging")
    assert prompt.list_history(ORG, "greeting").items == before
    prompt.promote(ORG, "greeting", "2", USER, environment="staging", expected_production=1)
    assert placed(prompt, "staging") == 2


def test_refusals_change_nothing(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", USER, environment="staging")
    prompt.archive_version(ORG, "greeting", "4")
    before = prompt.list_history(ORG, "greeting").items
    with pytest.raises(EnvironmentNotFound):
        prompt.promote(ORG, "greeting", "2", USER, environment="nope")
    with pytest.raises(LifecycleError, match="archived"):
        prompt.promote(ORG, "greeting", "4", USER, environment="staging")
    with pytest.raises(LifecycleError, match="already"):
        prompt.promote(ORG, "greeting", "1", USER, environment="staging")
    with pytest.raises(PromptNotFound):
        prompt.promote(ORG, "nope", "1", USER, environment="staging")
    assert prompt.list_history(ORG, "greeting").items == before
    assert placed(prompt, "staging") == 1


def test_protected_environment_refuses_direct_promotion(prompt: Storage) -> None:
    prompt.update_environment(ORG, "staging", required_approvals=1)
    prompt.update_environment(ORG, "production", required_approvals=2)
    for env in ["staging", "production"]:
        with pytest.raises(ReviewRequired) as refused:
            prompt.promote(ORG, "greeting", "1", USER, environment=env)
        assert refused.value.environment == env
    assert prompt.list_history(ORG, "greeting").items == []
    assert {v.status for v in prompt.list_versions(ORG, "greeting").items} == {"draft"}


def test_rollback_in_an_environment(prompt: Storage) -> None:
    for n in ["1", "2", "3"]:
        prompt.promote(ORG, "greeting", n, USER, environment="staging")
    prompt.promote(ORG, "greeting", "4", USER)  # production's own history is apart
    prompt.update_environment(ORG, "staging", required_approvals=1)  # no review needed
    done = prompt.rollback(ORG, "greeting", USER, environment="staging")
    assert (done.record.environment, done.record.version_number) == ("staging", 2)
    assert (done.record.previous_version, done.record.notes) == (3, "rollback to v2")
    assert done.version.status == "draft" and placed(prompt, "staging") == 2
    assert placed(prompt, "production") == 4
    done = prompt.rollback(ORG, "greeting", USER, environment="staging", to_version=3)
    assert placed(prompt, "staging") == 3
    with pytest.raises(NoRollbackTarget, match="no qa version"):
        prompt.rollback(ORG, "greeting", USER, environment="qa")
    prompt.promote(ORG, "greeting", "1", USER, environment="qa")
    with pytest.raises(NoRollbackTarget, match="never been qa"):
        prompt.rollback(ORG, "greeting", USER, environment="qa", to_version=2)
    with pytest.raises(NoRollbackTarget, match="first qa version"):
        prompt.rollback(ORG, "greeting", USER, environment="qa")
    with pytest.raises(NoRollbackTarget, match="never been staging"):
        prompt.rollback(ORG, "greeting", USER, environment="staging", to_version=4)
    with pytest.raises(ProductionChanged):
        prompt.rollback(ORG, "greeting", USER, environment="staging", expected_production=1)
    with pytest.raises(EnvironmentNotFound):
        prompt.rollback(ORG, "greeting", USER, environment="nope")


def test_production_rollback_skips_other_environments_records(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", USER)
    prompt.promote(ORG, "greeting", "2", USER)
    prompt.promote(ORG, "greeting", "3", USER, environment="staging")
    done = prompt.rollback(ORG, "greeting", USER)
    assert (done.record.environment, done.record.version_number) == ("production", 1)


def test_archived_rollback_target_is_refused(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", USER, environment="staging")
    prompt.promote(ORG, "greeting", "2", USER, environment="staging")
    prompt.archive_version(ORG, "greeting", "1")
    with pytest.raises(LifecycleError, match="archived"):
        prompt.rollback(ORG, "greeting", USER, environment="staging")


def test_archive_and_delete_take_a_version_out(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", USER, environment="staging")
    prompt.promote(ORG, "greeting", "1", USER, environment="qa")
    prompt.promote(ORG, "greeting", "2", USER, environment="production")
    prompt.promote(ORG, "greeting", "3", USER, environment="production")  # 2 archived
    archived = prompt.archive_version(ORG, "greeting", "1")
    assert archived.environments == []
    assert placed(prompt, "staging") is None and placed(prompt, "qa") is None
    prompt.unarchive_version(ORG, "greeting", "1")
    assert prompt.get_version(ORG, "greeting", "1").environments == []
    prompt.promote(ORG, "greeting", "4", USER, environment="qa")
    prompt.delete_version(ORG, "greeting", "4")
    assert placed(prompt, "qa") is None
    with pytest.raises(NothingInEnvironment, match="qa"):
        prompt.get_in_environment(ORG, "greeting", "qa")
    prompt.promote(ORG, "greeting", "1", USER, environment="qa")  # the slot is free again
    assert placed(prompt, "qa") == 1


def test_reads_of_an_environment(prompt: Storage) -> None:
    with pytest.raises(EnvironmentNotFound):
        prompt.get_in_environment(ORG, "greeting", "nope")
    with pytest.raises(NoProductionVersion):
        prompt.get_in_environment(ORG, "greeting", "production")
    with pytest.raises(PromptNotFound):
        prompt.get_in_environment(ORG, "nope", "staging")
    prompt.promote(ORG, "greeting", "2", USER, environment="staging")
    by_id = prompt.get_prompt(ORG, "greeting").prompt_id
    assert prompt.get_in_environment(ORG, by_id, "staging").version == 2
    read = prompt.get_in_environment(ORG, "greeting", "staging")
    assert read.to_json()["environments"] == ["staging"]


def test_delete_environment_takes_its_placements(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", USER, environment="staging")
    prompt.promote(ORG, "greeting", "1", USER, environment="qa")
    prompt.delete_environment(ORG, "staging")
    assert [e.name for e in prompt.list_environments(ORG)] == ["production", "qa"]
    assert prompt.get_version(ORG, "greeting", "1").environments == ["qa"]
    with pytest.raises(EnvironmentNotFound):
        prompt.get_in_environment(ORG, "greeting", "staging")
    with pytest.raises(LifecycleError):
        prompt.delete_environment(ORG, "production")
    with pytest.raises(EnvironmentNotFound):
        prompt.delete_environment(ORG, "staging")
    # A new environment of the same name starts empty.
    prompt.create_environment(ORG, "staging")
    assert placed(prompt, "staging") is None
    assert len(prompt.list_history(ORG, "greeting").items) == 2  # the records stay


def test_delete_prompt_takes_its_placements(prompt: Storage) -> None:
    prompt.promote(ORG, "greeting", "1", USER, environment="staging")
    prompt.delete_prompt(ORG, "greeting")
    prompt.create_prompt(ORG, "greeting")
    prompt.create_version(ORG, "greeting", "x", USER)
    assert placed(prompt, "staging") is None


def test_rollback_in_an_environment_walks_back_its_own_line(prompt: Storage) -> None:
    for n in ["1", "2", "3"]:
        prompt.promote(ORG, "greeting", n, USER, environment="staging")
        prompt.promote(ORG, "greeting", n, USER, environment="qa")
    assert prompt.rollback(ORG, "greeting", USER, environment="staging").version.version == 2
    # Never back to 3, which staging was rolled back from: on to 1, then nothing.
    assert prompt.rollback(ORG, "greeting", USER, environment="staging").version.version == 1
    with pytest.raises(NoRollbackTarget, match="first staging version"):
        prompt.rollback(ORG, "greeting", USER, environment="staging")
    # qa's line is its own.
    assert prompt.rollback(ORG, "greeting", USER, environment="qa").version.version == 2
    assert placed(prompt, "qa") == 2 and placed(prompt, "staging") == 1
