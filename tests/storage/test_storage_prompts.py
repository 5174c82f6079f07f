"""Prompts: create, get by name or id, list with cursors, delete, tenancy."""

from __future__ import annotations

import pytest

from storage import (
    InvalidInput,
    PromptExists,
    PromptNotFound,
    Storage,
    VersionNotFound,
    encode_cursor,
)

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def test_create_prompt_returns_the_record(storage: Storage, clock) -> None:
    prompt = storage.create_prompt(ORG, "greeting", "chat", "Says hello")
    assert prompt.prompt_id.startswith("pmt_") and len(prompt.prompt_id) > len("pmt_") + 16
    assert (prompt.name, prompt.prompt_type, prompt.description) == (
        "greeting",
        "chat",
        "Says hello",
    )
    assert prompt.created_at == prompt.updated_at == clock.now
    assert prompt.latest_version is None and prompt.production_version is None
    assert storage.get_prompt(ORG, "greeting") == prompt


def test_defaults_text_and_no_description(storage: Storage) -> None:
    prompt = storage.create_prompt(ORG, "plain")
    assert prompt.prompt_type == "text" and prompt.description is None
    assert storage.get_prompt(ORG, "plain").description is None


def test_prompt_ids_are_unique(storage: Storage) -> None:
    ids = {storage.create_prompt(ORG, f"p{i}").prompt_id for i in range(20)}
    assert len(ids) == 20


def test_duplicate_name_conflicts_within_an_org_only(storage: Storage) -> None:
    first = storage.create_prompt(ORG, "greeting")
    with pytest.raises(PromptExists, match="greeting"):
        storage.create_prompt(ORG, "greeting", "chat")
    assert storage.get_prompt(ORG, "greeting") == first  # the refused call changed nothing
    other = storage.create_prompt("globex", "greeting")
    assert other.prompt_id != first.prompt_id


def test_get_by_name_or_id(storage: Storage) -> None:
    prompt = storage.create_prompt(ORG, "greeting")
    assert storage.get_prompt(ORG, prompt.prompt_id) == storage.get_prompt(ORG, "greeting")


@pytest.mark.parametrize(
    "ref", ["missing", "pmt_00000000000000000000000000000000", "pmt_", "pmt_x:names", ""]
)
def test_unknown_prompt(storage: Storage, ref: str) -> None:
    storage.create_prompt(ORG, "greeting")
    with pytest.raises(PromptNotFound) as caught:
        storage.get_prompt(ORG, ref)
    assert caught.value.prompt_ref == ref


def test_a_prompt_id_cannot_reach_other_keys(storage: Storage) -> None:
    # A ref built to look like one of the prompt's sub-keys is not a prompt.
    prompt = storage.create_prompt(ORG, "greeting")
    version = storage.create_version(ORG, "greeting", "hi", USER)
    for ref in (f"{prompt.prompt_id}:v:{version.version_id}", f"{prompt.prompt_id}:versions"):
        with pytest.raises(PromptNotFound):
            storage.get_prompt(ORG, ref)


def test_latest_and_production_numbers(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    for i in range(3):
        storage.create_version(ORG, "greeting", f"v{i}", USER)
    storage.promote(ORG, "greeting", "2", USER)
    prompt = storage.get_prompt(ORG, "greeting")
    assert (prompt.latest_version, prompt.production_version) == (3, 2)
    storage.delete_version(ORG, "greeting", "3")
    assert storage.get_prompt(ORG, "greeting").latest_version == 2


def test_updated_at_moves_when_a_version_is_created(storage: Storage, clock) -> None:
    created = storage.create_prompt(ORG, "greeting")
    later = clock.advance(60)
    storage.create_version(ORG, "greeting", "hi", USER)
    prompt = storage.get_prompt(ORG, "greeting")
    assert prompt.created_at == created.created_at and prompt.updated_at == later


# --------------------------------------------------------------------------- listing


def test_list_prompts_in_name_order_with_cursor(storage: Storage) -> None:
    for name in ["delta", "alpha", "echo", "charlie", "bravo"]:
        storage.create_prompt(ORG, name)
    seen, cursor, pages = [], None, 0
    while True:
        page = storage.list_prompts(ORG, limit=2, cursor=cursor)
        pages += 1
        assert len(page.items) <= 2
        seen += [p.name for p in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ["alpha", "bravo", "charlie", "delta", "echo"]
    assert pages == 3


def test_last_full_page_has_no_cursor(storage: Storage) -> None:
    for name in ["a", "b", "c", "d"]:
        storage.create_prompt(ORG, name)
    first = storage.list_prompts(ORG, limit=2)
    assert first.next_cursor is not None
    second = storage.list_prompts(ORG, limit=2, cursor=first.next_cursor)
    assert [p.name for p in second.items] == ["c", "d"] and second.next_cursor is None
    everything = storage.list_prompts(ORG, limit=4)
    assert len(everything.items) == 4 and everything.next_cursor is None


def test_listed_prompts_carry_their_numbers(storage: Storage) -> None:
    storage.create_prompt(ORG, "a")
    storage.create_prompt(ORG, "b")
    storage.create_version(ORG, "b", "x", USER)
    storage.promote(ORG, "b", "1", USER)
    listed = {p.name: p for p in storage.list_prompts(ORG).items}
    assert listed["a"] == storage.get_prompt(ORG, "a")
    assert (listed["b"].latest_version, listed["b"].production_version) == (1, 1)


def test_list_prompts_of_an_empty_org(storage: Storage) -> None:
    page = storage.list_prompts("nobody")
    assert page.items == [] and page.next_cursor is None


@pytest.mark.parametrize("cursor", ["%%%", "not a cursor!", "A"])
def test_list_prompts_rejects_a_foreign_cursor(storage: Storage, cursor: str) -> None:
    storage.create_prompt(ORG, "a")
    with pytest.raises(InvalidInput):
        storage.list_prompts(ORG, cursor=cursor)


# --------------------------------------------------------------------------- delete


def test_delete_prompt_removes_versions_and_history(storage: Storage) -> None:
    prompt = storage.create_prompt(ORG, "greeting")
    old = [storage.create_version(ORG, "greeting", f"v{i}", USER) for i in range(3)]
    storage.promote(ORG, "greeting", "1", USER)
    storage.promote(ORG, "greeting", "2", USER)
    storage.delete_prompt(ORG, "greeting")

    for ref in ("greeting", prompt.prompt_id):
        with pytest.raises(PromptNotFound):
            storage.get_prompt(ORG, ref)
        with pytest.raises(PromptNotFound):
            storage.get_version(ORG, ref, old[0].version_id)
        with pytest.raises(PromptNotFound):
            storage.list_history(ORG, ref)
    assert storage.list_prompts(ORG).items == []

    again = storage.create_prompt(ORG, "greeting")
    assert again.prompt_id != prompt.prompt_id
    assert storage.create_version(ORG, "greeting", "fresh", USER).version == 1
    assert storage.list_history(ORG, "greeting").items == []
    assert [v.version for v in storage.list_versions(ORG, "greeting").items] == [1]
    for version in old:
        with pytest.raises(VersionNotFound):
            storage.get_version(ORG, "greeting", version.version_id)


def test_delete_prompt_by_id(storage: Storage) -> None:
    prompt = storage.create_prompt(ORG, "greeting")
    storage.delete_prompt(ORG, prompt.prompt_id)
    with pytest.raises(PromptNotFound):
        storage.get_prompt(ORG, "greeting")


def test_delete_unknown_prompt(storage: Storage) -> None:
    with pytest.raises(PromptNotFound):
        storage.delete_prompt(ORG, "missing")


def test_delete_leaves_other_prompts_alone(storage: Storage) -> None:
    storage.create_prompt(ORG, "a")
    storage.create_version(ORG, "a", "keep", USER)
    storage.create_prompt(ORG, "b")
    storage.delete_prompt(ORG, "b")
    assert [p.name for p in storage.list_prompts(ORG).items] == ["a"]
    assert storage.get_latest(ORG, "a").content == "keep"


# --------------------------------------------------------------------------- tenancy


def test_another_org_cannot_see_a_prompt(storage: Storage) -> None:
    prompt = storage.create_prompt(ORG, "secret")
    version = storage.create_version(ORG, "secret", "classified", USER)
    storage.promote(ORG, "secret", "1", USER)
    for ref in ("secret", prompt.prompt_id):
        with pytest.raises(PromptNotFound):
            storage.get_prompt("globex", ref)
        with pytest.raises(PromptNotFound):
            storage.get_production("globex", ref)
        with pytest.raises(PromptNotFound):
            storage.get_version("globex", ref, version.version_id)
        with pytest.raises(PromptNotFound):
            storage.create_version("globex", ref, "x", USER)
        with pytest.raises(PromptNotFound):
            storage.delete_prompt("globex", ref)
    assert storage.list_prompts("globex").items == []
    assert storage.get_production(ORG, "secret") == storage.get_version(ORG, "secret", "1")


def test_another_orgs_version_id_is_not_found(storage: Storage) -> None:
    storage.create_prompt(ORG, "greeting")
    theirs = storage.create_version(ORG, "greeting", "acme's", USER)
    storage.create_prompt("globex", "greeting")
    storage.create_version("globex", "greeting", "globex's", USER)
    with pytest.raises(VersionNotFound):
        storage.get_version("globex", "greeting", theirs.version_id)
    with pytest.raises(VersionNotFound):
        storage.promote("globex", "greeting", theirs.version_id, USER)
    assert storage.get_version("globex", "greeting", "1").content == "globex's"


def test_cursor_is_checked_for_every_listing(storage: Storage) -> None:
    storage.create_prompt(ORG, "a")
    # A name cursor is not a version-number or history cursor.
    name_cursor = encode_cursor("a")
    with pytest.raises(InvalidInput):
        storage.list_versions(ORG, "a", cursor=name_cursor)
    with pytest.raises(InvalidInput):
        storage.list_history(ORG, "a", cursor=name_cursor)
