"""Users: per org, unique usernames, found by name and by id, updated in place."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from storage import ApiKey, Storage, User, UserExists, UserNotFound
from tests.storage.test_storage_concurrency import all_at_once

ORG = "acme"
CREATED = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def user(username: str, org: str = ORG, **changes: object) -> User:
    fields: dict[str, object] = {
        "org": org,
        "user_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{org}/{username}")),
        "username": username,
        "role": "Service Read",
        "disabled": False,
        "created_at": CREATED,
        "updated_at": CREATED,
        "password_hash": f"$argon2id$v=19$m=19456,t=2,p=1$salt${username}",
    }
    fields.update(changes)
    return User(**fields)  # type: ignore[arg-type]


def test_add_and_get_by_name_and_id(storage: Storage) -> None:
    ada = user("ada", role="Service Admin")
    storage.add_user(ada)
    assert storage.get_user(ORG, "ada") == ada
    assert storage.get_user_by_id(ORG, ada.user_id) == ada
    assert storage.get_user(ORG, "bob") is None
    assert storage.get_user_by_id(ORG, "00000000-0000-4000-8000-000000000000") is None
    assert storage.get_user("globex", "ada") is None
    assert storage.get_user_by_id("globex", ada.user_id) is None


def test_usernames_with_every_allowed_character(storage: Storage) -> None:
    odd = user("a.b_c@d-e.example")
    storage.add_user(odd)
    assert storage.get_user(ORG, "a.b_c@d-e.example") == odd
    assert storage.list_users(ORG) == [odd]


def test_username_is_unique_per_org(storage: Storage) -> None:
    storage.add_user(user("ada"))
    with pytest.raises(UserExists, match="ada"):
        storage.add_user(user("ada", user_id="11111111-1111-4111-8111-111111111111"))
    assert storage.get_user(ORG, "ada") == user("ada")
    assert storage.get_user_by_id(ORG, "11111111-1111-4111-8111-111111111111") is None
    assert storage.list_users(ORG) == [user("ada")]
    storage.add_user(user("ada", org="globex"))
    assert storage.get_user("globex", "ada") == user("ada", org="globex")


def test_list_oldest_first(storage: Storage) -> None:
    added = [user(name) for name in ("zoe", "ada", "mia")]  # same created_at on purpose
    for u in added:
        storage.add_user(u)
    storage.add_user(user("elsewhere", org="globex"))
    assert storage.list_users(ORG) == added
    assert storage.list_users("nobody") == []


def test_update_changes_only_what_is_given(storage: Storage, clock) -> None:
    ada = user("ada", created_at=clock.utc(), updated_at=clock.utc())
    storage.add_user(ada)
    later = clock.advance(30)
    promoted = storage.update_user(ORG, "ada", role="Service Write")
    assert promoted == replace(ada, role="Service Write", updated_at=later)
    disabled = storage.update_user(ORG, "ada", disabled=True)
    assert disabled == replace(promoted, disabled=True)
    rehashed = storage.update_user(ORG, "ada", password_hash="$argon2id$new")
    assert rehashed == replace(disabled, password_hash="$argon2id$new")
    enabled = storage.update_user(ORG, "ada", disabled=False)
    assert not enabled.disabled and enabled.role == "Service Write"
    assert storage.get_user(ORG, "ada") == enabled
    assert storage.get_user_by_id(ORG, ada.user_id) == enabled
    assert storage.list_users(ORG) == [enabled]


def test_update_with_nothing_moves_updated_at_only(storage: Storage, clock) -> None:
    ada = user("ada")
    storage.add_user(ada)
    now = clock.advance(5)
    assert storage.update_user(ORG, "ada") == replace(ada, updated_at=now)


def test_update_unknown_user(storage: Storage) -> None:
    storage.add_user(user("ada"))
    with pytest.raises(UserNotFound, match="bob"):
        storage.update_user(ORG, "bob", role="Service Admin")
    with pytest.raises(UserNotFound):
        storage.update_user("globex", "ada", disabled=True)
    assert storage.get_user(ORG, "bob") is None
    assert storage.get_user("globex", "ada") is None
    assert storage.get_user(ORG, "ada") == user("ada")


def test_an_org_exists_once_it_has_a_user(storage: Storage) -> None:
    assert not storage.org_exists(ORG)
    storage.add_user(user("ada"))
    assert storage.org_exists(ORG)
    assert not storage.org_exists("globex")
    storage.update_user(ORG, "ada", disabled=True)
    assert storage.org_exists(ORG)  # a disabled user still makes the realm
    key = ApiKey("globex", "k", "hash", "Service Read", "u", None, CREATED)
    storage.add_api_key(key)
    assert storage.org_exists("globex")


def test_users_and_keys_do_not_mix(storage: Storage) -> None:
    storage.add_user(user("admin"))
    storage.add_api_key(ApiKey(ORG, "admin", "hash", "Service Admin", "u", None, CREATED))
    assert storage.list_users(ORG) == [user("admin")]
    assert [k.client_id for k in storage.list_api_keys(ORG)] == ["admin"]


def test_threads_adding_one_username_one_wins(storage: Storage) -> None:
    candidates = [user("ada", user_id=f"00000000-0000-4000-8000-{i:012d}") for i in range(8)]
    results = all_at_once(8, lambda i: storage.add_user(candidates[i]))
    failures = [r for r in results if isinstance(r, Exception)]
    assert len(failures) == 7 and all(isinstance(f, UserExists) for f in failures), results
    winner = candidates[results.index(None)]
    assert storage.list_users(ORG) == [winner]
    assert storage.get_user_by_id(ORG, winner.user_id) == winner
    losers = [c for c in candidates if c is not winner]
    assert all(storage.get_user_by_id(ORG, c.user_id) is None for c in losers)
