"""Safe releases on every backend: guarded promotion and rollback, each one atomic step."""

from __future__ import annotations

import pytest

from storage import (
    UNGUARDED,
    Expected,
    LifecycleError,
    NoRollbackTarget,
    ProductionChanged,
    PromptNotFound,
    Storage,
    VersionNotFound,
)
from tests.clock import FakeClock

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
PROMOTER = "7d8f6a0e-3f43-4c1b-8a4e-2b51e0c4d7aa"


@pytest.fixture
def ids(storage: Storage) -> list[str]:
    storage.create_prompt(ORG, "greeting")
    return [storage.create_version(ORG, "greeting", f"c{i}", USER).version_id for i in range(5)]


def statuses(storage: Storage) -> dict[int, str]:
    return {v.version: v.status for v in storage.list_versions(ORG, "greeting").items}


def history(storage: Storage) -> list[tuple[int, int | None, str | None]]:
    """(version, previous, notes) of every promotion, oldest first."""
    items = storage.list_history(ORG, "greeting", limit=200).items
    return [(r.version_number, r.previous_version, r.notes) for r in reversed(items)]


def unchanged(storage: Storage) -> tuple[object, ...]:
    """Everything a refused change must leave as it was."""
    return (
        storage.list_versions(ORG, "greeting", limit=200).items,
        storage.list_history(ORG, "greeting", limit=200).items,
        storage.get_prompt(ORG, "greeting"),
    )


# --------------------------------------------------------------------------- guarded promote


@pytest.mark.parametrize("expected", [None, UNGUARDED])
def test_guarded_first_promotion(storage: Storage, ids: list[str], expected: Expected) -> None:
    result = storage.promote(ORG, "greeting", "2", PROMOTER, expected_production=expected)
    assert result.version.status == "published" and result.record.previous_version is None
    assert statuses(storage)[2] == "published"


@pytest.mark.parametrize("archive_previous", [True, False])
def test_guard_that_holds_promotes(
    storage: Storage, ids: list[str], clock: FakeClock, archive_previous: bool
) -> None:
    storage.promote(ORG, "greeting", "1", PROMOTER)
    now = clock.advance(3)
    result = storage.promote(
        ORG, "greeting", ids[2], USER, "n", archive_previous, expected_production=1
    )
    assert (result.version.version, result.version.promoted_at) == (3, now)
    assert (result.record.version_number, result.record.previous_version) == (3, 1)
    assert result.record.promoted_by == USER and result.record.notes == "n"
    assert statuses(storage)[1] == ("archived" if archive_previous else "draft")
    assert storage.get_production(ORG, "greeting").version == 3


@pytest.mark.parametrize(
    ("setup", "expected", "current"),
    [
        ([], 1, None),  # expects a production version, there is none
        (["1"], None, 1),  # expects none, there is one
        (["1"], 2, 1),  # expects another number
        (["1", "2"], 1, 2),  # expects the one before
        (["1"], 99, 1),  # expects a version that does not exist
    ],
)
def test_guard_that_fails_changes_nothing(
    storage: Storage,
    ids: list[str],
    clock: FakeClock,
    setup: list[str],
    expected: int | None,
    current: int | None,
) -> None:
    for ref in setup:
        storage.promote(ORG, "greeting", ref, PROMOTER)
    before = unchanged(storage)
    clock.advance(10)
    with pytest.raises(ProductionChanged) as caught:
        storage.promote(ORG, "greeting", "4", USER, expected_production=expected)
    assert (caught.value.current, caught.value.expected) == (current, expected)
    assert caught.value.prompt_ref == "greeting"
    message = str(caught.value)
    assert "greeting" in message and "nothing was changed" in message
    assert ("no production version" in message) == (None in (expected, current))
    assert unchanged(storage) == before


def test_the_version_status_is_checked_before_the_guard(storage: Storage, ids: list[str]) -> None:
    # docs/api.md section 9: the version itself answers first, then the guard.
    storage.promote(ORG, "greeting", "2", PROMOTER, expected_production=None)
    with pytest.raises(LifecycleError, match="only a draft") as caught:
        storage.promote(ORG, "greeting", "2", PROMOTER, expected_production=None)
    assert (caught.value.reason, caught.value.extras()) == ("status", {"status": "published"})
    with pytest.raises(ProductionChanged) as guarded:
        storage.promote(ORG, "greeting", "3", PROMOTER, expected_production=None)
    assert (guarded.value.current, guarded.value.reason) == (2, "version_changed")


def test_missing_prompt_or_version_wins_over_the_guard(storage: Storage, ids: list[str]) -> None:
    with pytest.raises(PromptNotFound):
        storage.promote(ORG, "nope", "1", PROMOTER, expected_production=5)
    with pytest.raises(VersionNotFound):
        storage.promote(ORG, "greeting", "9", PROMOTER, expected_production=5)


def test_unguarded_promotion_is_unchanged(storage: Storage, ids: list[str]) -> None:
    storage.promote(ORG, "greeting", "1", PROMOTER)
    storage.promote(ORG, "greeting", "2", PROMOTER)
    assert storage.promote(ORG, "greeting", "3", PROMOTER).record.previous_version == 2
    assert history(storage) == [(1, None, None), (2, 1, None), (3, 2, None)]


# --------------------------------------------------------------------------- rollback


def promote_all(storage: Storage, *refs: str) -> None:
    for ref in refs:
        storage.promote(ORG, "greeting", ref, PROMOTER, notes=f"ship {ref}")


def test_rollback_to_the_previous_production_version(
    storage: Storage, ids: list[str], clock: FakeClock
) -> None:
    promote_all(storage, "1", "2")
    now = clock.advance(7)
    result = storage.rollback(ORG, "greeting", USER)
    version, record = result.version, result.record
    assert (version.version, version.version_id, version.status) == (1, ids[0], "published")
    assert version.is_production and version.content == "c0"
    assert (version.promoted_at, version.promoted_by, version.updated_at) == (now, USER, now)
    assert record.history_id.startswith("h_") and record.prompt_id == version.prompt_id
    assert (record.version_number, record.previous_version) == (1, 2)
    assert (record.promoted_by, record.promoted_at, record.notes) == (USER, now, "rollback to v1")
    assert storage.get_production(ORG, "greeting") == version
    assert storage.list_history(ORG, "greeting").items[0] == record
    replaced = storage.get_version(ORG, "greeting", "2")
    assert replaced.status == "archived" and replaced.updated_at == now
    assert replaced.promoted_by == PROMOTER  # its own promotion stays on record
    assert statuses(storage) == {5: "draft", 4: "draft", 3: "draft", 2: "archived", 1: "published"}
    prompt = storage.get_prompt(ORG, "greeting")
    assert prompt.production_version == 1 and prompt.updated_at == now


def test_a_second_rollback_walks_further_back(storage: Storage, ids: list[str]) -> None:
    # v1, v2, v4 were production in turn; rolled back from v4 to v2, the next rollback
    # goes on to v1, never back to v4.
    promote_all(storage, "1", "2", "4")
    assert storage.previous_production(ORG, "greeting") == 2
    assert storage.rollback(ORG, "greeting", USER).version.version == 2
    assert storage.previous_production(ORG, "greeting") == 1
    assert storage.rollback(ORG, "greeting", USER).version.version == 1
    assert history(storage)[-2:] == [(2, 4, "rollback to v2"), (1, 2, "rollback to v1")]
    assert storage.previous_production(ORG, "greeting") is None
    before = unchanged(storage)
    with pytest.raises(NoRollbackTarget) as caught:
        storage.rollback(ORG, "greeting", USER)
    assert caught.value.why == "first" and unchanged(storage) == before
    # Named, a version rolled back from is production again; the walk goes on from it.
    assert storage.rollback(ORG, "greeting", USER, to_version=4).version.version == 4
    assert storage.previous_production(ORG, "greeting") == 1
    assert storage.rollback(ORG, "greeting", USER).version.version == 1
    assert statuses(storage)[1] == "published"


def test_a_promotion_after_a_rollback_continues_the_walk(storage: Storage, ids: list[str]) -> None:
    promote_all(storage, "1", "2")
    storage.rollback(ORG, "greeting", USER)  # from 2 to 1
    storage.promote(ORG, "greeting", "3", PROMOTER)
    assert storage.previous_production(ORG, "greeting") == 1
    assert storage.rollback(ORG, "greeting", USER).version.version == 1
    assert storage.previous_production(ORG, "greeting") is None


def test_previous_production_of_a_missing_prompt(storage: Storage) -> None:
    with pytest.raises(PromptNotFound):
        storage.previous_production(ORG, "nope")


def test_rollback_target_that_went_back_to_draft(storage: Storage, ids: list[str]) -> None:
    storage.promote(ORG, "greeting", "1", PROMOTER)
    storage.promote(ORG, "greeting", "2", PROMOTER, archive_previous=False)
    assert statuses(storage)[1] == "draft"
    result = storage.rollback(ORG, "greeting", USER)
    assert result.version.version == 1 and result.record.previous_version == 2
    # The replaced version is archived whatever promote would have done.
    assert statuses(storage) == {5: "draft", 4: "draft", 3: "draft", 2: "archived", 1: "published"}


def test_rollback_to_version(storage: Storage, ids: list[str], clock: FakeClock) -> None:
    promote_all(storage, "1", "2", "3", "4")
    now = clock.advance(1)
    result = storage.rollback(ORG, "greeting", USER, notes="bad week", to_version=2)
    assert (result.version.version, result.version.status, result.version.promoted_at) == (
        2,
        "published",
        now,
    )
    assert (result.record.version_number, result.record.previous_version) == (2, 4)
    assert result.record.notes == "bad week"
    assert statuses(storage) == {
        5: "draft",
        4: "archived",
        3: "archived",
        2: "published",
        1: "archived",
    }


def test_rollback_notes_given_empty_are_kept(storage: Storage, ids: list[str]) -> None:
    promote_all(storage, "1", "2")
    assert storage.rollback(ORG, "greeting", USER, notes="").record.notes == ""


def test_rollback_by_prompt_id(storage: Storage, ids: list[str]) -> None:
    promote_all(storage, "1", "2")
    prompt_id = storage.get_prompt(ORG, "greeting").prompt_id
    assert storage.rollback(ORG, prompt_id, USER).record.prompt_id == prompt_id
    assert storage.get_production(ORG, "greeting").version == 1


def test_rolled_back_version_can_be_promoted_from_again(storage: Storage, ids: list[str]) -> None:
    promote_all(storage, "1", "2")
    storage.rollback(ORG, "greeting", USER)
    storage.promote(ORG, "greeting", "3", PROMOTER, expected_production=1)
    assert history(storage)[-1] == (3, 1, None)
    assert statuses(storage) == {
        5: "draft",
        4: "draft",
        3: "published",
        2: "archived",
        1: "archived",
    }


@pytest.mark.parametrize(
    ("setup", "kwargs", "reason", "words"),
    [
        ([], {}, "no_production", "no production version"),
        ([], {"to_version": 1}, "no_production", "no production version"),
        (["1"], {}, "first", "first production version"),
        (["1", "2"], {"to_version": 3}, "never", "never been production"),
        (["1", "2"], {"to_version": 99}, "missing", "does not exist"),
        (["1", "2"], {"to_version": 2}, "current", "production already"),
    ],
)
def test_rollback_refusals_change_nothing(
    storage: Storage,
    ids: list[str],
    setup: list[str],
    kwargs: dict[str, int],
    reason: str,
    words: str,
) -> None:
    promote_all(storage, *setup)
    before = unchanged(storage)
    with pytest.raises(NoRollbackTarget, match=words) as caught:
        storage.rollback(ORG, "greeting", USER, **kwargs)
    assert caught.value.why == reason
    assert isinstance(caught.value, LifecycleError)  # a 409 like every lifecycle refusal
    assert unchanged(storage) == before


def test_rollback_to_a_deleted_version(storage: Storage, ids: list[str]) -> None:
    promote_all(storage, "1", "2", "3")
    storage.delete_version(ORG, "greeting", "2")  # archived by promoting 3
    before = unchanged(storage)
    with pytest.raises(NoRollbackTarget, match="version 2, production before version 3") as c:
        storage.rollback(ORG, "greeting", USER)
    assert c.value.why == "deleted"
    with pytest.raises(NoRollbackTarget, match="does not exist") as c:
        storage.rollback(ORG, "greeting", USER, to_version=2)
    assert c.value.why == "missing"
    assert unchanged(storage) == before
    # Version 1, production earlier still, can be named.
    assert storage.rollback(ORG, "greeting", USER, to_version=1).record.previous_version == 3


def test_rollback_of_missing_prompt(storage: Storage, ids: list[str]) -> None:
    with pytest.raises(PromptNotFound):
        storage.rollback(ORG, "nope", USER)
    with pytest.raises(PromptNotFound):
        storage.rollback("globex", "greeting", USER)


@pytest.mark.parametrize("kwargs", [{}, {"to_version": 1}])
def test_rollback_guard_holds(storage: Storage, ids: list[str], kwargs: dict[str, int]) -> None:
    promote_all(storage, "1", "2")
    result = storage.rollback(ORG, "greeting", USER, expected_production=2, **kwargs)
    assert (result.record.version_number, result.record.previous_version) == (1, 2)


@pytest.mark.parametrize(
    ("setup", "expected", "current"),
    [(["1", "2"], 1, 2), (["1", "2"], None, 2), ([], 1, None), (["1"], 3, 1)],
)
def test_rollback_guard_fails_first(
    storage: Storage, ids: list[str], setup: list[str], expected: int | None, current: int | None
) -> None:
    # Checked before anything else: even where the rollback itself would be refused.
    promote_all(storage, *setup)
    before = unchanged(storage)
    with pytest.raises(ProductionChanged) as caught:
        storage.rollback(ORG, "greeting", USER, expected_production=expected)
    assert caught.value.current == current and caught.value.expected == expected
    assert unchanged(storage) == before


def test_always_exactly_one_published_through_promotions_and_rollbacks(
    storage: Storage, ids: list[str]
) -> None:
    steps = [("p", "1"), ("p", "2"), ("r", None), ("p", "3"), ("r", 2), ("r", None), ("r", 1)]
    for kind, arg in steps:
        if kind == "p":
            storage.promote(ORG, "greeting", str(arg), PROMOTER)
        else:
            storage.rollback(ORG, "greeting", USER, to_version=arg)  # type: ignore[arg-type]
        published = storage.list_versions(ORG, "greeting", status="published").items
        assert len(published) == 1
        assert published[0].version == storage.get_prompt(ORG, "greeting").production_version
    assert [v for v, _, _ in history(storage)] == [1, 2, 1, 3, 2, 3, 1]
    assert [p for _, p, _ in history(storage)] == [None, 1, 2, 1, 3, 2, 3]
