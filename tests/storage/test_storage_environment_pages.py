"""An environment's whole read (read_environment_page) on every backend: each prompt's
version there by name, rollouts with their candidate, the org's newest event id, pages
and cursors, and what it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from storage import (
    EnvironmentNotFound,
    EnvironmentPage,
    InRollout,
    InvalidInput,
    PromptVersion,
    Storage,
    encode_cursor,
)
from storage.redis import BaseRedisStorage
from storage.sql.storage import SqlStorage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def newest_event(storage: Storage) -> str | None:
    return storage.event_log_bounds(ORG).newest


def names(page: EnvironmentPage) -> list[str]:
    return [item.baseline.name if isinstance(item, InRollout) else item.name for item in page.items]


@pytest.fixture
def org(storage: Storage) -> Storage:
    """b, a, d in production (a at version 2, b and d at 1); c has only a draft; staging
    holds b's version 2 and d's version 1."""
    storage.create_environment(ORG, "staging")
    for name in ("b", "a", "c", "d"):
        storage.create_prompt(ORG, name)
        storage.create_version(ORG, name, f"{name} one", USER)
        storage.create_version(ORG, name, f"{name} two {{{{x}}}}", USER)
    storage.promote(ORG, "b", "1", USER)
    storage.promote(ORG, "a", "2", USER)
    storage.promote(ORG, "d", "1", USER)
    storage.promote(ORG, "b", "2", USER, environment="staging")
    storage.promote(ORG, "d", "1", USER, environment="staging")
    return storage


def test_production_is_every_prompt_with_a_published_version_by_name(org: Storage) -> None:
    page = org.read_environment_page(ORG, "production")
    assert page.environment == "production"
    assert names(page) == ["a", "b", "d"]
    assert page.items == [org.read_environment(ORG, n, "production") for n in "abd"]
    assert page.next_cursor is None
    assert page.event_id is not None and page.event_id == newest_event(org)


def test_another_environment_holds_its_own_versions(org: Storage) -> None:
    page = org.read_environment_page(ORG, "staging")
    assert names(page) == ["b", "d"]
    assert [item.version for item in page.items if isinstance(item, PromptVersion)] == [2, 1]


def test_pages_follow_the_cursor_to_the_end(org: Storage) -> None:
    first = org.read_environment_page(ORG, "production", limit=2)
    assert names(first) == ["a", "b"] and first.next_cursor is not None
    second = org.read_environment_page(ORG, "production", limit=2, cursor=first.next_cursor)
    assert names(second) == ["d"] and second.next_cursor is None
    exact = org.read_environment_page(ORG, "production", limit=3)
    assert names(exact) == ["a", "b", "d"] and exact.next_cursor is None


def test_a_running_rollout_comes_with_its_candidate(org: Storage) -> None:
    rollout = org.start_rollout(ORG, "b", "2", "production", 30, USER)
    page = org.read_environment_page(ORG, "production")
    item = page.items[1]
    assert isinstance(item, InRollout)
    assert item == org.read_environment(ORG, "b", "production")
    assert (item.baseline.version, item.candidate.version) == (1, 2)
    assert item.rollout.rollout_id == rollout.rollout_id and item.rollout.percent == 30
    assert page.event_id == newest_event(org)
    org.abort_rollout(ORG, "b", "production")
    assert org.read_environment_page(ORG, "production").items[1] == org.read_environment(
        ORG, "b", "production"
    )


def test_the_event_id_moves_with_every_change(org: Storage) -> None:
    before = org.read_environment_page(ORG, "production").event_id
    org.create_version(ORG, "c", "c three", USER)
    after = org.read_environment_page(ORG, "production")
    assert after.event_id != before and after.event_id == newest_event(org)
    assert org.events_after(ORG, after.event_id or "0-0", 10) == []


def test_an_empty_environment_and_an_empty_org(storage: Storage) -> None:
    page = storage.read_environment_page(ORG, "production")
    assert (page.items, page.next_cursor, page.event_id) == ([], None, None)
    storage.create_environment(ORG, "qa")
    page = storage.read_environment_page(ORG, "qa")
    assert page.items == [] and page.event_id == newest_event(storage)


def test_an_unknown_environment_is_not_found(org: Storage) -> None:
    with pytest.raises(EnvironmentNotFound):
        org.read_environment_page(ORG, "nowhere")
    with pytest.raises(EnvironmentNotFound):
        org.read_environment_page("other", "nowhere")


def test_another_orgs_prompts_are_not_listed(org: Storage) -> None:
    org.create_prompt("other", "a")
    org.create_version("other", "a", "theirs", USER)
    org.promote("other", "a", "1", USER)
    assert names(org.read_environment_page("other", "production")) == ["a"]
    assert names(org.read_environment_page(ORG, "production")) == ["a", "b", "d"]


@pytest.mark.parametrize("cursor", ["%%%", "not base64!", encode_cursor("\x00")])
def test_a_cursor_not_handed_out_is_invalid_input(org: Storage, cursor: str) -> None:
    with pytest.raises(InvalidInput):
        org.read_environment_page(ORG, "production", cursor=cursor)


def test_prompts_without_a_version_there_are_skipped_across_pages(storage: Storage) -> None:
    for i in range(30):
        name = f"p{i:02d}"
        storage.create_prompt(ORG, name)
        storage.create_version(ORG, name, "text", USER)
        if i % 10 == 9:
            storage.promote(ORG, name, "1", USER)
    seen: list[str] = []
    cursor = None
    while True:
        page = storage.read_environment_page(ORG, "production", limit=1, cursor=cursor)
        seen += names(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == ["p09", "p19", "p29"]


def test_sql_answers_a_page_with_one_statement(sql_storage: SqlStorage) -> None:
    for name in ("a", "b", "c"):
        sql_storage.create_prompt(ORG, name)
        sql_storage.create_version(ORG, name, "text", USER)
        sql_storage.promote(ORG, name, "1", USER)
    statements: list[str] = []

    def counted(*args: Any) -> None:
        statements.append(args[2])

    event.listen(sql_storage.engine, "before_cursor_execute", counted)
    try:
        page = sql_storage.read_environment_page(ORG, "production", limit=2)
        sql_storage.read_environment_page(ORG, "production", limit=2, cursor=page.next_cursor)
    finally:
        event.remove(sql_storage.engine, "before_cursor_execute", counted)
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 2
    assert not [s for s in statements if not s.lstrip().upper().startswith(("SELECT", "BEGIN"))]


def test_redis_answers_a_page_with_one_script(
    redis_storage: BaseRedisStorage[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b", "c"):
        redis_storage.create_prompt(ORG, name)
        redis_storage.create_version(ORG, name, "text", USER)
        redis_storage.promote(ORG, name, "1", USER)
    redis_storage.read_environment_page(ORG, "production")  # the script loaded
    sent: list[str] = []
    client = redis_storage.client
    send = client.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]))
        return send(*args, **options)

    monkeypatch.setattr(client, "execute_command", counted)
    assert len(redis_storage.read_environment_page(ORG, "production").items) == 3
    assert sent == ["EVALSHA"]
