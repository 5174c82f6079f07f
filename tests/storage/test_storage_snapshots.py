"""Backup and restore in storage: list_orgs, export_org, import_org on every backend."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import redis

from storage import (
    ApiKey,
    LifecycleError,
    OrgNotEmpty,
    OrgSnapshot,
    PromptExists,
    PromptNotFound,
    Storage,
    UserExists,
    Webhook,
)
from storage.redis import BaseRedisStorage, keys
from tests.backup_sample import AUTHOR, PROMOTER, populate, raw
from tests.clock import FakeClock

ORG = "acme"
COPY = "acme-copy"


def hook(clock: FakeClock) -> Webhook:
    return Webhook(
        "wh_" + "0" * 31 + "1", "https://example.com/", ("*",), None, "whsec_c2VjcmV0", clock.utc()
    )


def moved(snapshot: OrgSnapshot, org: str) -> OrgSnapshot:
    """The same records under another org slug."""
    return replace(
        snapshot,
        org=org,
        api_keys=tuple(replace(k, org=org) for k in snapshot.api_keys),
        users=tuple(replace(u, org=org) for u in snapshot.users),
    )


def test_nothing_to_export_from_an_empty_storage(storage: Storage) -> None:
    assert storage.list_orgs() == []
    assert storage.export_org(ORG) == OrgSnapshot(ORG, (), (), ())
    assert storage.export_org(ORG).is_empty()


def test_list_orgs_names_every_org_with_data(storage: Storage, clock: FakeClock) -> None:
    storage.create_prompt("zeta", "only-a-prompt")
    populate(storage, ORG, clock)
    storage.add_api_key(ApiKey("beta", "k", "hash", "Service Read", AUTHOR, None, clock.now))
    bob = storage.list_users(ORG)[1]
    storage.add_user(replace(bob, org="people-only"))
    storage.create_prompt("gone", "p")
    storage.delete_prompt("gone", "p")  # nothing left: not an org to back up
    assert storage.list_orgs() == [ORG, "beta", "people-only", "zeta"]


def test_export_holds_every_record_as_stored(storage: Storage, clock: FakeClock) -> None:
    populate(storage, ORG, clock)
    snapshot = storage.export_org(ORG)
    names = [p.prompt.name for p in snapshot.prompts]
    assert names == ["empty", "greeting", "support-chat", "typed"]
    empty, greeting, chat, typed = snapshot.prompts
    assert (empty.next_version, empty.versions, empty.history) == (0, (), ())
    assert greeting.prompt == storage.get_prompt(ORG, "greeting")
    assert greeting.next_version == 6  # version 6 was deleted; 6 stays used
    assert list(greeting.versions) == storage.list_versions(ORG, "greeting").items[::-1]
    assert [v.status for v in greeting.versions] == [
        "draft",
        "draft",
        "published",
        "draft",
        "archived",
    ]
    assert list(greeting.history) == storage.list_history(ORG, "greeting").items[::-1]
    assert [r.notes for r in greeting.history] == ["first", None, ""]
    assert chat.versions[0] == storage.get_production(ORG, "support-chat")
    assert list(typed.versions) == storage.list_versions(ORG, "typed").items[::-1]
    assert typed.versions[0].examples[1] == {"name": None, "variables": {"who": "Bob"}}
    assert [r.breaking for r in typed.history] == [False, True]
    assert [k.client_id for k in snapshot.api_keys] == ["reader", "admin", "ci"]
    assert snapshot.api_keys == tuple(storage.list_api_keys(ORG))
    assert snapshot.api_keys[2].revoked
    assert snapshot.users == tuple(storage.list_users(ORG))
    assert [(u.username, u.disabled) for u in snapshot.users] == [
        ("ada@example.com", False),
        ("bob", True),
    ]


def test_import_restores_every_record_exactly(storage: Storage, clock: FakeClock) -> None:
    populate(storage, ORG, clock)
    original = storage.export_org(ORG)
    storage.import_org(moved(original, COPY))
    assert storage.export_org(COPY) == moved(original, COPY)
    assert storage.list_orgs() == [ORG, COPY]
    assert storage.org_exists(COPY)
    for name in ("greeting", "support-chat", "empty"):
        prompt = storage.get_prompt(COPY, name)
        assert prompt == storage.get_prompt(ORG, name)
        assert storage.get_prompt(COPY, prompt.prompt_id) == prompt
        assert storage.list_versions(COPY, name) == storage.list_versions(ORG, name)
        assert storage.list_history(COPY, name) == storage.list_history(ORG, name)
    assert storage.list_prompts(COPY) == storage.list_prompts(ORG)
    assert storage.get_production(COPY, "greeting").version == 3
    assert storage.get_latest(COPY, "greeting").version == 5
    for status, numbers in (("draft", [4, 2, 1]), ("published", [3]), ("archived", [5])):
        found = storage.list_versions(COPY, "greeting", status=status).items
        assert [v.version for v in found] == numbers
    for user in storage.list_users(ORG):
        copied = replace(user, org=COPY)
        assert storage.get_user(COPY, user.username) == copied
        assert storage.get_user_by_id(COPY, user.user_id) == copied
    version = storage.get_version(ORG, "greeting", "4")
    assert storage.get_version(COPY, "greeting", version.version_id) == version
    assert storage.get_api_key(COPY, "ci") == replace(storage.get_api_key(ORG, "ci"), org=COPY)  # type: ignore[arg-type]


def test_every_operation_works_on_restored_data(storage: Storage, clock: FakeClock) -> None:
    populate(storage, ORG, clock)
    storage.import_org(moved(storage.export_org(ORG), COPY))
    # Numbers go on from the counter, not from the highest kept version (5).
    assert storage.create_version(COPY, "greeting", "new", AUTHOR).version == 7
    assert storage.create_version(COPY, "empty", "first", AUTHOR).version == 1
    promotion = storage.promote(COPY, "greeting", "7", PROMOTER)
    assert promotion.record.previous_version == 3
    page = storage.list_history(COPY, "greeting", limit=2)
    assert [r.version_number for r in page.items] == [7, 3]
    rest = storage.list_history(COPY, "greeting", cursor=page.next_cursor)
    assert [r.version_number for r in rest.items] == [2, 1]
    assert storage.get_version(COPY, "greeting", "3").status == "archived"
    storage.unarchive_version(COPY, "greeting", "5")
    storage.edit_version(COPY, "greeting", "5", "edited again")
    with pytest.raises(LifecycleError):
        storage.edit_version(COPY, "greeting", "3", "archived: no edits")
    storage.delete_version(COPY, "greeting", "4")
    # A rollback walks the restored history: greeting from 7 back to 3; support-chat was
    # rolled back from 2 to 1 before the backup, so it goes back to 2 only when named.
    rolled = storage.rollback(COPY, "greeting", PROMOTER)
    assert (rolled.version.version, rolled.record.previous_version) == (3, 7)
    assert storage.previous_production(COPY, "support-chat") is None
    rolled = storage.rollback(COPY, "support-chat", PROMOTER, to_version=2)
    assert (rolled.version.version, rolled.record.previous_version) == (2, 1)
    with pytest.raises(PromptExists):
        storage.create_prompt(COPY, "greeting")
    storage.delete_prompt(COPY, "support-chat")
    with pytest.raises(PromptNotFound):
        storage.get_prompt(COPY, "support-chat")
    storage.create_prompt(COPY, "support-chat", "chat")  # the name is free again
    assert storage.revoke_api_key(COPY, "reader").revoked
    assert storage.update_user(COPY, "bob", disabled=False).role == "Service Write"
    with pytest.raises(UserExists):
        storage.add_user(replace(storage.list_users(COPY)[0], user_id="another"))
    # The original is untouched by all of it.
    assert storage.get_latest(ORG, "greeting").version == 5
    assert not storage.get_api_key(ORG, "reader").revoked  # type: ignore[union-attr]
    assert storage.get_user(ORG, "bob").disabled  # type: ignore[union-attr]


@pytest.mark.parametrize("existing", ["prompt", "key", "revoked key", "user"])
def test_import_into_an_org_with_data_refuses_and_writes_nothing(
    storage: Storage, clock: FakeClock, existing: str
) -> None:
    populate(storage, ORG, clock)
    snapshot = moved(storage.export_org(ORG), COPY)
    if existing == "prompt":
        storage.create_prompt(COPY, "mine")
    elif existing == "user":
        storage.add_user(replace(snapshot.users[0], user_id="someone-else"))
    else:
        storage.add_api_key(ApiKey(COPY, "k", "hash", "Service Read", AUTHOR, None, clock.now))
        if existing == "revoked key":
            storage.revoke_api_key(COPY, "k")
    before = storage.export_org(COPY)
    with pytest.raises(OrgNotEmpty, match=f"org '{COPY}' is not empty.*nothing was written"):
        storage.import_org(snapshot)
    assert storage.export_org(COPY) == before
    with pytest.raises(PromptNotFound):
        storage.get_prompt(COPY, "greeting")


def test_an_org_emptied_by_deletes_takes_a_restore(storage: Storage, clock: FakeClock) -> None:
    populate(storage, ORG, clock)
    snapshot = moved(storage.export_org(ORG), COPY)
    storage.create_prompt(COPY, "temporary")
    storage.delete_prompt(COPY, "temporary")
    storage.import_org(snapshot)
    assert storage.export_org(COPY) == snapshot


def test_an_empty_snapshot_writes_nothing(storage: Storage) -> None:
    storage.import_org(OrgSnapshot(COPY, (), (), ()))
    assert storage.list_orgs() == [] and not storage.org_exists(COPY)


def test_a_snapshot_leaves_webhooks_out(storage: Storage, clock: FakeClock) -> None:
    populate(storage, ORG, clock)
    storage.add_webhook(ORG, hook(clock))
    snapshot = storage.export_org(ORG)
    storage.import_org(moved(snapshot, COPY))
    assert storage.list_webhooks(ORG) == [hook(clock)]
    assert storage.list_webhooks(COPY) == []
    assert storage.export_org(COPY) == moved(snapshot, COPY)


# --------------------------------------------------------------------------- Redis only


def test_restore_writes_every_key_as_the_operations_left_it(
    redis_storage: BaseRedisStorage[Any], clock: FakeClock
) -> None:
    populate(redis_storage, ORG, clock)
    redis_storage.add_webhook(ORG, hook(clock))  # not in a backup: raw() leaves it out
    redis_storage.import_org(moved(redis_storage.export_org(ORG), COPY))
    original = raw(redis_storage, ORG)
    assert raw(redis_storage, COPY) == original
    # The counters are among them: the prompt hash's "next" and "hseq".
    pid = redis_storage.get_prompt(ORG, "greeting").prompt_id
    counters = original[keys.prompt(ORG, pid).removeprefix(keys.org_prefix(ORG))]
    assert (counters["next"], counters["hseq"]) == ("6", "3")  # type: ignore[index]


def test_list_orgs_adds_the_orgs_written_before_the_set_of_orgs_once(
    redis_storage: BaseRedisStorage[Any], clock: FakeClock
) -> None:
    populate(redis_storage, ORG, clock)
    redis_storage.create_prompt("prompts-only", "p")
    redis_storage.add_user(replace(redis_storage.list_users(ORG)[0], org="people-only"))
    redis_storage.client.delete(keys.ORGS, keys.ORGS_COMPLETE)  # as before it existed
    assert redis_storage.list_orgs() == [ORG, "people-only", "prompts-only"]
    assert redis_storage.client.exists(keys.ORGS_COMPLETE)
    redis_storage.client.delete(keys.ORGS)
    assert redis_storage.list_orgs() == []  # done once: from now on the set alone counts


def test_the_restore_script_writes_only_inside_its_org(
    redis_storage: BaseRedisStorage[Any],
) -> None:
    prefix = keys.org_prefix(COPY)
    mine, other = prefix + "a", keys.org_prefix(ORG) + "a"
    for writes in (
        ["HSET", mine, "2", "f", "v", "HSET", other, "2", "f", "v"],
        ["HSET", mine, "2", "f", "v", "DEL", prefix + "b", "0"],
        ["HSET", mine, "4", "f", "v"],
    ):
        with pytest.raises(redis.ResponseError, match="restore_org"):
            redis_storage._run("restore_org", [prefix], ["0", *writes])
        assert not redis_storage.client.exists(mine)


def test_a_big_prompt_is_exported_and_restored_in_one_call(
    redis_storage: BaseRedisStorage[Any],
) -> None:
    # More members than one write batch (500) and than Lua's unpack() limit.
    redis_storage.create_prompt(ORG, "big")
    for _ in range(1200):
        redis_storage.create_version(ORG, "big", "c", AUTHOR)
    snapshot = redis_storage.export_org(ORG)
    assert len(snapshot.prompts[0].versions) == 1200
    redis_storage.import_org(moved(snapshot, COPY))
    assert redis_storage.export_org(COPY) == moved(snapshot, COPY)
    assert redis_storage.get_latest(COPY, "big").version == 1200
    assert len(redis_storage.list_versions(COPY, "big", status="draft", limit=200).items) == 200


@pytest.mark.parametrize(
    ("key", "org"),
    [
        ("ps:{acme}:keys", "acme"),
        ("ps:{a-1}:names", "a-1"),
        ("ps:{acme}:users", "acme"),
        ("ps:{acme}:user:users", None),
        ("ps:{acme}:key:keys", None),  # the hash of a key whose client_id is "keys"
        ("ps:{acme}:p:pmt_1:names", None),
        ("ps:{_global}:keys", None),
        ("ps:{acme}:keys\n", None),
    ],
)
def test_the_org_of_an_index_key(key: str, org: str | None) -> None:
    assert keys.org_of_index_key(key) == org
