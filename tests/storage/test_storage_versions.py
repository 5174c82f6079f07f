"""Versions: numbering, reads, listing, edit, archive, unarchive, delete, variables."""

from __future__ import annotations

import json

import pytest

from storage import (
    InvalidInput,
    LifecycleError,
    NoProductionVersion,
    PromptNotFound,
    Storage,
    VersionNotFound,
    encode_cursor,
)

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
OTHER_USER = "7d8f6a0e-3f43-4c1b-8a4e-2b51e0c4d7aa"


@pytest.fixture
def prompt(storage: Storage) -> str:
    storage.create_prompt(ORG, "greeting", "text", "hello")
    return "greeting"


def make(storage: Storage, count: int, name: str = "greeting") -> list[str]:
    return [
        storage.create_version(ORG, name, f"content {i}", USER).version_id for i in range(count)
    ]


# --------------------------------------------------------------------------- create


def test_create_version_record(storage: Storage, prompt: str, clock) -> None:
    meta = {"model": "gpt", "temperature": 0.2, "nested": {"a": [1, 2]}}
    version = storage.create_version(
        ORG,
        prompt,
        "Hello {{ name }} from {{place}}",
        USER,
        meta,
        ["a", "b"],
        variables=["name", "place"],
    )
    parent = storage.get_prompt(ORG, prompt)
    assert version.version_id.startswith("v_") and len(version.version_id) > len("v_") + 16
    assert version.prompt_id == parent.prompt_id and version.name == prompt
    assert version.version == 1 and version.status == "draft" and not version.is_production
    assert version.content == "Hello {{ name }} from {{place}}"
    assert version.variables == ("name", "place")
    assert version.prompt_type == "text"
    assert version.metadata == meta and version.tags == ("a", "b")
    assert version.created_at == version.updated_at == clock.now
    assert version.promoted_at is None and version.promoted_by is None
    assert version.created_by == USER
    assert storage.get_version(ORG, prompt, version.version_id) == version


def test_defaults_for_metadata_and_tags(storage: Storage, prompt: str) -> None:
    version = storage.create_version(ORG, prompt, "x", USER)
    assert version.metadata == {} and version.tags == ()
    assert storage.get_version(ORG, prompt, "1") == version


def test_stored_metadata_is_not_the_callers_dict(storage: Storage, prompt: str) -> None:
    meta: dict[str, object] = {"k": "v"}
    storage.create_version(ORG, prompt, "x", USER, meta)
    meta["k"] = "changed"
    assert storage.get_version(ORG, prompt, "1").metadata == {"k": "v"}


def test_create_version_unknown_prompt(storage: Storage) -> None:
    with pytest.raises(PromptNotFound):
        storage.create_version(ORG, "missing", "x", USER)


def test_numbers_start_at_one_and_increase(storage: Storage, prompt: str) -> None:
    numbers = [storage.create_version(ORG, prompt, f"c{i}", USER).version for i in range(5)]
    assert numbers == [1, 2, 3, 4, 5]


def test_numbers_are_per_prompt(storage: Storage, prompt: str) -> None:
    storage.create_prompt(ORG, "other")
    make(storage, 3)
    assert storage.create_version(ORG, "other", "x", USER).version == 1


def test_numbers_never_reused_after_delete_or_archive(storage: Storage, prompt: str) -> None:
    make(storage, 3)
    storage.delete_version(ORG, prompt, "3")  # the highest: latest drops to 2
    assert storage.create_version(ORG, prompt, "after delete", USER).version == 4
    storage.archive_version(ORG, prompt, "4")
    assert storage.create_version(ORG, prompt, "after archive", USER).version == 5
    storage.delete_version(ORG, prompt, "5")
    storage.delete_version(ORG, prompt, "4")
    assert storage.create_version(ORG, prompt, "again", USER).version == 6
    assert [v.version for v in storage.list_versions(ORG, prompt).items] == [6, 2, 1]


# --------------------------------------------------------------------------- variables


def test_variables_are_kept_as_given(storage: Storage, prompt: str) -> None:
    """Storage keeps the variables the layer above extracted (promptsvc.templating.template)."""
    version = storage.create_version(ORG, prompt, "{{a}} {{ b.c }}", USER, variables=["a", "b.c"])
    assert version.variables == ("a", "b.c")
    assert storage.get_latest(ORG, prompt).variables == ("a", "b.c")
    edited = storage.edit_version(ORG, prompt, "1", "{{ z }}", variables=("z",))
    assert edited.variables == ("z",) and storage.get_version(ORG, prompt, "1") == edited


def test_no_variables_by_default(storage: Storage, prompt: str) -> None:
    assert storage.create_version(ORG, prompt, "plain {{ text }}", USER).variables == ()
    assert storage.edit_version(ORG, prompt, "1", "{{ still }} none").variables == ()


def test_a_chat_version_keeps_its_variables(storage: Storage) -> None:
    storage.create_prompt(ORG, "chat", "chat")
    content = json.dumps([{"role": "user", "content": "{{question}} ({{ lang }})"}])
    version = storage.create_version(ORG, "chat", content, USER, variables=["question", "lang"])
    assert version.variables == ("question", "lang")
    assert version.prompt_type == "chat" and version.content == content
    assert storage.get_version(ORG, "chat", "1") == version


# --------------------------------------------------------------------------- reads


def test_get_by_number_or_id(storage: Storage, prompt: str) -> None:
    ids = make(storage, 3)
    for number, version_id in enumerate(ids, start=1):
        by_id = storage.get_version(ORG, prompt, version_id)
        assert by_id.version == number
        assert storage.get_version(ORG, prompt, str(number)) == by_id


@pytest.mark.parametrize(
    "ref",
    [
        "0",
        "4",
        "-1",
        "1.0",
        "one",
        "",
        "v_",
        "v_missing",
        "latest",
        "\u00b2",  # superscript two: str.isdigit() says yes, int() says no
        "\u0661",  # Arabic-Indic one: not an ASCII number either
        "v_x:y",
        "99999999999999999999999",
    ],
)
def test_unknown_version_refs(storage: Storage, prompt: str, ref: str) -> None:
    make(storage, 3)
    with pytest.raises(VersionNotFound) as caught:
        storage.get_version(ORG, prompt, ref)
    assert caught.value.version_ref == ref and caught.value.prompt_ref == prompt


def test_version_ref_of_an_unknown_prompt(storage: Storage) -> None:
    for ref in ("1", "v_x", "nonsense"):
        with pytest.raises(PromptNotFound):
            storage.get_version(ORG, "missing", ref)


def test_version_id_of_another_prompt(storage: Storage, prompt: str) -> None:
    storage.create_prompt(ORG, "other")
    theirs = storage.create_version(ORG, "other", "x", USER)
    make(storage, 1)
    with pytest.raises(VersionNotFound):
        storage.get_version(ORG, prompt, theirs.version_id)
    for change in (storage.archive_version, storage.delete_version, storage.unarchive_version):
        with pytest.raises(VersionNotFound):
            change(ORG, prompt, theirs.version_id)
    with pytest.raises(VersionNotFound):
        storage.edit_version(ORG, prompt, theirs.version_id, "hijack")
    assert storage.get_version(ORG, "other", theirs.version_id) == theirs


def test_latest_is_the_highest_existing_number(storage: Storage, prompt: str) -> None:
    with pytest.raises(VersionNotFound):
        storage.get_latest(ORG, prompt)
    make(storage, 3)
    storage.promote(ORG, prompt, "1", USER)
    storage.archive_version(ORG, prompt, "3")
    assert storage.get_latest(ORG, prompt).version == 3  # whatever its status
    storage.delete_version(ORG, prompt, "3")
    assert storage.get_latest(ORG, prompt).version == 2


def test_latest_of_unknown_prompt(storage: Storage) -> None:
    with pytest.raises(PromptNotFound):
        storage.get_latest(ORG, "missing")


def test_production(storage: Storage, prompt: str) -> None:
    with pytest.raises(NoProductionVersion):
        storage.get_production(ORG, prompt)
    make(storage, 2)
    with pytest.raises(NoProductionVersion):
        storage.get_production(ORG, prompt)
    storage.promote(ORG, prompt, "1", USER)
    production = storage.get_production(ORG, prompt)
    assert production.version == 1 and production.status == "published"
    assert production.is_production
    assert storage.get_production(ORG, storage.get_prompt(ORG, prompt).prompt_id) == production


def test_production_of_unknown_prompt(storage: Storage) -> None:
    with pytest.raises(PromptNotFound):
        storage.get_production(ORG, "missing")


# --------------------------------------------------------------------------- listing


def test_list_versions_newest_first_with_cursor(storage: Storage, prompt: str) -> None:
    make(storage, 7)
    seen, cursor = [], None
    while True:
        page = storage.list_versions(ORG, prompt, limit=3, cursor=cursor)
        assert len(page.items) <= 3
        seen += [v.version for v in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [7, 6, 5, 4, 3, 2, 1]


def test_list_versions_exact_page(storage: Storage, prompt: str) -> None:
    make(storage, 4)
    first = storage.list_versions(ORG, prompt, limit=2)
    second = storage.list_versions(ORG, prompt, limit=2, cursor=first.next_cursor)
    assert [v.version for v in second.items] == [2, 1] and second.next_cursor is None
    assert storage.list_versions(ORG, prompt, limit=4).next_cursor is None


def test_list_versions_status_filter(storage: Storage, prompt: str) -> None:
    make(storage, 6)
    storage.archive_version(ORG, prompt, "2")
    storage.archive_version(ORG, prompt, "5")
    storage.promote(ORG, prompt, "3", USER)
    by_status = {
        status: [v.version for v in storage.list_versions(ORG, prompt, status=status).items]
        for status in ("draft", "published", "archived")
    }
    assert by_status == {"draft": [6, 4, 1], "published": [3], "archived": [5, 2]}
    page = storage.list_versions(ORG, prompt, status="draft", limit=2)
    assert [v.version for v in page.items] == [6, 4]
    rest = storage.list_versions(ORG, prompt, status="draft", limit=2, cursor=page.next_cursor)
    assert [v.version for v in rest.items] == [1] and rest.next_cursor is None
    assert storage.list_versions(ORG, prompt, status="bogus").items == []


def test_listed_versions_equal_single_reads(storage: Storage, prompt: str) -> None:
    make(storage, 3)
    storage.promote(ORG, prompt, "2", USER)
    for version in storage.list_versions(ORG, prompt).items:
        assert storage.get_version(ORG, prompt, version.version_id) == version


@pytest.mark.parametrize(
    "cursor", ["%%%", encode_cursor("abc"), encode_cursor("-1"), encode_cursor("\u00b2"), "A"]
)
def test_list_versions_rejects_foreign_cursor(storage: Storage, prompt: str, cursor: str) -> None:
    make(storage, 2)
    with pytest.raises(InvalidInput):
        storage.list_versions(ORG, prompt, cursor=cursor)


def test_list_versions_unknown_prompt(storage: Storage) -> None:
    with pytest.raises(PromptNotFound):
        storage.list_versions(ORG, "missing")


# --------------------------------------------------------------------------- edit


def test_edit_draft(storage: Storage, prompt: str, clock) -> None:
    created = storage.create_version(ORG, prompt, "Hi {{ a }}", USER, {"m": 1}, ["t"])
    later = clock.advance(30)
    edited = storage.edit_version(ORG, prompt, "1", "Bye {{ b }} {{c}}", variables=["b", "c"])
    assert edited.content == "Bye {{ b }} {{c}}" and edited.variables == ("b", "c")
    assert edited.updated_at == later and edited.created_at == created.created_at
    assert (edited.version_id, edited.version, edited.status) == (created.version_id, 1, "draft")
    assert (edited.metadata, edited.tags, edited.created_by) == ({"m": 1}, ("t",), USER)
    assert storage.get_version(ORG, prompt, created.version_id) == edited


@pytest.mark.parametrize("status", ["published", "archived"])
def test_only_drafts_can_be_edited(storage: Storage, prompt: str, status: str) -> None:
    make(storage, 1)
    if status == "published":
        storage.promote(ORG, prompt, "1", USER)
    else:
        storage.archive_version(ORG, prompt, "1")
    before = storage.get_version(ORG, prompt, "1")
    with pytest.raises(LifecycleError, match="draft"):
        storage.edit_version(ORG, prompt, "1", "changed")
    assert storage.get_version(ORG, prompt, "1") == before


def test_edit_unknown(storage: Storage, prompt: str) -> None:
    with pytest.raises(VersionNotFound):
        storage.edit_version(ORG, prompt, "1", "x")
    with pytest.raises(PromptNotFound):
        storage.edit_version(ORG, "missing", "1", "x")


# --------------------------------------------------------------------------- archive


def test_archive_and_unarchive(storage: Storage, prompt: str, clock) -> None:
    created = storage.create_version(ORG, prompt, "x", USER)
    archived_at = clock.advance(10)
    archived = storage.archive_version(ORG, prompt, created.version_id)
    assert archived.status == "archived" and archived.updated_at == archived_at
    assert storage.get_version(ORG, prompt, "1") == archived
    unarchived_at = clock.advance(10)
    draft = storage.unarchive_version(ORG, prompt, "1")
    assert draft.status == "draft" and draft.updated_at == unarchived_at
    assert draft.created_at == created.created_at and draft.content == "x"
    assert storage.get_version(ORG, prompt, "1") == draft


def test_published_cannot_be_archived(storage: Storage, prompt: str) -> None:
    make(storage, 1)
    storage.promote(ORG, prompt, "1", USER)
    with pytest.raises(LifecycleError, match="promote another version"):
        storage.archive_version(ORG, prompt, "1")
    assert storage.get_production(ORG, prompt).version == 1


def test_archived_cannot_be_archived_again(storage: Storage, prompt: str) -> None:
    make(storage, 1)
    storage.archive_version(ORG, prompt, "1")
    with pytest.raises(LifecycleError, match="draft"):
        storage.archive_version(ORG, prompt, "1")


@pytest.mark.parametrize("status", ["draft", "published"])
def test_only_archived_can_be_unarchived(storage: Storage, prompt: str, status: str) -> None:
    make(storage, 1)
    if status == "published":
        storage.promote(ORG, prompt, "1", USER)
    with pytest.raises(LifecycleError, match="archived"):
        storage.unarchive_version(ORG, prompt, "1")
    assert storage.get_version(ORG, prompt, "1").status == status


def test_archive_unknown(storage: Storage, prompt: str) -> None:
    with pytest.raises(VersionNotFound):
        storage.archive_version(ORG, prompt, "1")
    with pytest.raises(VersionNotFound):
        storage.unarchive_version(ORG, prompt, "v_nope")
    with pytest.raises(PromptNotFound):
        storage.archive_version(ORG, "missing", "1")


# --------------------------------------------------------------------------- delete


@pytest.mark.parametrize("status", ["draft", "archived"])
def test_delete_version(storage: Storage, prompt: str, status: str) -> None:
    ids = make(storage, 2)
    if status == "archived":
        storage.archive_version(ORG, prompt, "1")
    storage.delete_version(ORG, prompt, ids[0])
    for ref in ("1", ids[0]):
        with pytest.raises(VersionNotFound):
            storage.get_version(ORG, prompt, ref)
    assert [v.version for v in storage.list_versions(ORG, prompt).items] == [2]
    assert storage.list_versions(ORG, prompt, status=status).items == (
        [] if status == "archived" else [storage.get_version(ORG, prompt, "2")]
    )
    with pytest.raises(VersionNotFound):
        storage.delete_version(ORG, prompt, "1")


def test_published_cannot_be_deleted(storage: Storage, prompt: str) -> None:
    make(storage, 1)
    storage.promote(ORG, prompt, "1", USER)
    with pytest.raises(LifecycleError, match="published"):
        storage.delete_version(ORG, prompt, "1")
    assert storage.get_production(ORG, prompt).version == 1


def test_previous_production_can_be_deleted_once_archived(storage: Storage, prompt: str) -> None:
    make(storage, 2)
    storage.promote(ORG, prompt, "1", USER)
    storage.promote(ORG, prompt, "2", USER)
    storage.delete_version(ORG, prompt, "1")
    assert [v.version for v in storage.list_versions(ORG, prompt).items] == [2]
    # History keeps its records of the deleted version.
    assert [r.version_number for r in storage.list_history(ORG, prompt).items] == [2, 1]


def test_delete_unknown_version(storage: Storage) -> None:
    with pytest.raises(PromptNotFound):
        storage.delete_version(ORG, "missing", "1")
