"""Promotion: one atomic step, previous archived or draft, history records."""

from __future__ import annotations

import pytest

from storage import (
    InvalidInput,
    LifecycleError,
    PromptNotFound,
    Storage,
    VersionNotFound,
    encode_cursor,
)

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
PROMOTER = "7d8f6a0e-3f43-4c1b-8a4e-2b51e0c4d7aa"


@pytest.fixture
def ids(storage: Storage) -> list[str]:
    storage.create_prompt(ORG, "greeting")
    return [storage.create_version(ORG, "greeting", f"c{i}", USER).version_id for i in range(4)]


def statuses(storage: Storage) -> dict[int, str]:
    return {v.version: v.status for v in storage.list_versions(ORG, "greeting").items}


def test_first_promotion(storage: Storage, ids: list[str], clock) -> None:
    now = clock.advance(5)
    result = storage.promote(ORG, "greeting", ids[1], PROMOTER, notes="ship it")
    version, record = result.version, result.record
    assert version.version_id == ids[1] and version.version == 2
    assert version.status == "published" and version.is_production
    assert version.promoted_at == now and version.promoted_by == PROMOTER
    assert version.updated_at == now and version.created_by == USER
    assert record.history_id.startswith("h_")
    assert record.prompt_id == version.prompt_id
    assert (record.version_number, record.promoted_by, record.promoted_at) == (2, PROMOTER, now)
    assert record.previous_version is None and record.notes == "ship it"
    assert storage.get_production(ORG, "greeting") == version
    assert storage.get_version(ORG, "greeting", "2") == version
    assert storage.list_history(ORG, "greeting").items == [record]
    assert storage.get_prompt(ORG, "greeting").production_version == 2
    assert statuses(storage) == {4: "draft", 3: "draft", 2: "published", 1: "draft"}


def test_previous_production_is_archived(storage: Storage, ids: list[str], clock) -> None:
    first = storage.promote(ORG, "greeting", "1", PROMOTER).version
    now = clock.advance(5)
    second = storage.promote(ORG, "greeting", "3", USER)
    assert second.record.previous_version == 1
    assert storage.get_production(ORG, "greeting").version == 3
    old = storage.get_version(ORG, "greeting", "1")
    assert old.status == "archived" and not old.is_production and old.updated_at == now
    # Its promotion stays on record.
    assert old.promoted_at == first.promoted_at and old.promoted_by == PROMOTER
    assert statuses(storage) == {4: "draft", 3: "published", 2: "draft", 1: "archived"}


def test_previous_production_back_to_draft(storage: Storage, ids: list[str], clock) -> None:
    storage.promote(ORG, "greeting", "1", PROMOTER)
    storage.promote(ORG, "greeting", "2", PROMOTER, archive_previous=False)
    assert statuses(storage) == {4: "draft", 3: "draft", 2: "published", 1: "draft"}
    # A draft again, so it can be promoted again; the new promotion is recorded.
    now = clock.advance(60)
    again = storage.promote(ORG, "greeting", "1", USER, archive_previous=False)
    assert again.version.promoted_at == now and again.version.promoted_by == USER
    assert again.record.previous_version == 2
    assert statuses(storage) == {4: "draft", 3: "draft", 2: "draft", 1: "published"}


def test_exactly_one_published_after_many_promotions(storage: Storage, ids: list[str]) -> None:
    for ref in ("1", "2", "3", "4"):
        storage.promote(ORG, "greeting", ref, PROMOTER, archive_previous=ref != "3")
        published = storage.list_versions(ORG, "greeting", status="published").items
        assert [v.version for v in published] == [int(ref)]


@pytest.mark.parametrize("status", ["published", "archived"])
def test_only_drafts_can_be_promoted(storage: Storage, ids: list[str], status: str) -> None:
    if status == "published":
        storage.promote(ORG, "greeting", "1", PROMOTER)
    else:
        storage.archive_version(ORG, "greeting", "1")
    history = storage.list_history(ORG, "greeting").items
    with pytest.raises(LifecycleError, match="draft"):
        storage.promote(ORG, "greeting", "1", PROMOTER)
    assert storage.list_history(ORG, "greeting").items == history
    assert storage.get_version(ORG, "greeting", "1").status == status


def test_promote_unknown(storage: Storage, ids: list[str]) -> None:
    with pytest.raises(VersionNotFound):
        storage.promote(ORG, "greeting", "9", PROMOTER)
    with pytest.raises(VersionNotFound):
        storage.promote(ORG, "greeting", "v_nope", PROMOTER)
    with pytest.raises(PromptNotFound):
        storage.promote(ORG, "missing", "1", PROMOTER)
    assert storage.list_history(ORG, "greeting").items == []


def test_promote_by_prompt_id(storage: Storage, ids: list[str]) -> None:
    prompt_id = storage.get_prompt(ORG, "greeting").prompt_id
    result = storage.promote(ORG, prompt_id, ids[0], PROMOTER)
    assert result.record.prompt_id == prompt_id
    assert storage.get_production(ORG, "greeting").version_id == ids[0]


def test_notes_absent_or_empty(storage: Storage, ids: list[str]) -> None:
    assert storage.promote(ORG, "greeting", "1", PROMOTER).record.notes is None
    assert storage.promote(ORG, "greeting", "2", PROMOTER, notes="").record.notes == ""
    assert [r.notes for r in storage.list_history(ORG, "greeting").items] == ["", None]


# --------------------------------------------------------------------------- history


def test_history_newest_first_with_cursor(storage: Storage, ids: list[str], clock) -> None:
    records = []
    for ref in ("1", "2", "1", "3"):
        if storage.get_version(ORG, "greeting", ref).status == "archived":
            storage.unarchive_version(ORG, "greeting", ref)
        clock.advance(1)
        records.append(storage.promote(ORG, "greeting", ref, PROMOTER, notes=f"n{ref}").record)
    assert [r.version_number for r in records] == [1, 2, 1, 3]
    assert [r.previous_version for r in records] == [None, 1, 2, 1]
    assert len({r.history_id for r in records}) == 4

    seen, cursor = [], None
    while True:
        page = storage.list_history(ORG, "greeting", limit=3, cursor=cursor)
        assert len(page.items) <= 3
        seen += page.items
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == list(reversed(records))
    exact = storage.list_history(ORG, "greeting", limit=2)
    rest = storage.list_history(ORG, "greeting", limit=2, cursor=exact.next_cursor)
    assert rest.items == records[1::-1] and rest.next_cursor is None


def test_history_order_does_not_depend_on_the_clock(storage: Storage, ids: list[str]) -> None:
    # Every promotion at the same instant: order is the promotion sequence.
    for ref in ("2", "4", "1"):
        storage.promote(ORG, "greeting", ref, PROMOTER)
    assert [r.version_number for r in storage.list_history(ORG, "greeting").items] == [1, 4, 2]


def test_history_empty_and_unknown(storage: Storage, ids: list[str]) -> None:
    page = storage.list_history(ORG, "greeting")
    assert page.items == [] and page.next_cursor is None
    with pytest.raises(PromptNotFound):
        storage.list_history(ORG, "missing")


@pytest.mark.parametrize("cursor", ["%%%", encode_cursor("x"), encode_cursor("\u00b2"), "A"])
def test_history_rejects_foreign_cursor(storage: Storage, ids: list[str], cursor: str) -> None:
    storage.promote(ORG, "greeting", "1", PROMOTER)
    with pytest.raises(InvalidInput):
        storage.list_history(ORG, "greeting", cursor=cursor)


def test_history_is_per_prompt(storage: Storage, ids: list[str]) -> None:
    storage.create_prompt(ORG, "other")
    storage.create_version(ORG, "other", "x", USER)
    storage.promote(ORG, "other", "1", PROMOTER)
    storage.promote(ORG, "greeting", "2", PROMOTER)
    assert [r.version_number for r in storage.list_history(ORG, "greeting").items] == [2]
    assert [r.version_number for r in storage.list_history(ORG, "other").items] == [1]
