"""Backup and restore in storage: list_orgs, export_org, import_org on every backend."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import redis

from storage import (
    AlreadyApproved,
    ApiKey,
    Environment,
    LifecycleError,
    OrgNotEmpty,
    OrgSnapshot,
    PromptExists,
    PromptNotFound,
    ReviewExists,
    ReviewForbidden,
    Storage,
    UserExists,
    Webhook,
)
from storage.lifecycle import default_production
from storage.memory import MemoryStorage
from storage.redis import BaseRedisStorage, keys
from tests.backup_sample import AUTHOR, CAROL, DAVE, PROMOTER, populate, populate_releases, raw
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
    # Every org has production, as it is until changed.
    assert storage.export_org(ORG) == OrgSnapshot(ORG, (), (), (), (default_production(),))
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
    with pytest.raises(redis.ResponseError, match="apply_change"):
        redis_storage._apply(COPY, [], [["HSET", "a", "f", "v"], ["FLUSHALL", "b"]], [])
    assert not redis_storage.client.exists(mine)
    # Every key is named after the org's prefix: another org's key cannot be named.
    assert redis_storage._apply(COPY, [], [["HSET", other, "f", "v"]], [])
    assert redis_storage.client.exists(prefix + other)
    assert not redis_storage.client.exists(other)


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


# --------------------------------------------------------------------------- environments, reviews


def released(store: Storage, org: str, clock: FakeClock) -> OrgSnapshot:
    populate(store, org, clock)
    populate_releases(store, org, clock)
    return store.export_org(org)


def test_export_holds_environments_placements_and_reviews(
    storage: Storage, clock: FakeClock
) -> None:
    snapshot = released(storage, ORG, clock)
    assert snapshot.environments == tuple(storage.list_environments(ORG))
    assert [(e.name, e.required_approvals, e.description) for e in snapshot.environments] == [
        ("production", 0, "Live"),
        ("staging", 0, "Before production"),
        ("qa", 2, None),
        ("canary", 1, "One in ten"),
    ]
    greeting, chat = snapshot.prompts[1], snapshot.prompts[2]
    assert {v.version: v.placements for v in greeting.versions if v.placements} == {
        4: ("qa", "staging")
    }
    assert [v.environments for v in chat.versions] == [["production", "staging"], []]
    assert list(snapshot.reviews) == storage.list_reviews(ORG).items[::-1]
    assert [(r.environment, r.status, len(r.approvals)) for r in snapshot.reviews] == [
        ("staging", "stale", 1),
        ("qa", "applied", 2),
        ("qa", "open", 1),
        ("canary", "open", 0),
        ("production", "rejected", 0),
        ("production", "cancelled", 0),
        ("sandbox", "cancelled", 0),
        ("staging", "open", 0),
    ]
    acknowledged = snapshot.reviews[-1]
    assert acknowledged.allow_breaking is True
    assert [(c.variable, c.change) for c in acknowledged.breaking] == [("code", "newly_required")]
    assert {r.version_author for r in snapshot.reviews} == {AUTHOR}
    applied = [r for r in greeting.history if r.review_id is not None]
    assert [(r.environment, r.approved_by) for r in applied] == [("qa", (CAROL, DAVE))]


def test_environments_and_reviews_are_restored_and_work(storage: Storage, clock: FakeClock) -> None:
    original = released(storage, ORG, clock)
    storage.import_org(moved(original, COPY))
    assert storage.export_org(COPY) == moved(original, COPY)
    assert storage.list_environments(COPY) == storage.list_environments(ORG)
    for env in ("staging", "qa"):
        assert storage.get_in_environment(COPY, "greeting", env) == storage.get_in_environment(
            ORG, "greeting", env
        )
    for query in ({}, {"status": "open"}, {"environment": "qa"}, {"prompt_ref": "greeting"}):
        assert storage.list_reviews(COPY, **query) == storage.list_reviews(ORG, **query)  # type: ignore[arg-type]
    waiting, opened, acknowledged = [r for r in original.reviews if r.status == "open"]
    assert storage.get_review(COPY, waiting.review_id) == waiting
    assert storage.get_review(COPY, acknowledged.review_id).breaking == acknowledged.breaking
    # The open index, the request order and the two-person rule go on from the backup.
    with pytest.raises(ReviewExists):
        storage.request_review(COPY, "support-chat", "1", "qa", PROMOTER)
    with pytest.raises(AlreadyApproved):
        storage.approve_review(COPY, waiting.review_id, CAROL, "carol")
    with pytest.raises(ReviewForbidden):
        storage.approve_review(COPY, waiting.review_id, AUTHOR, "author")
    review, promotion = storage.approve_review(COPY, waiting.review_id, DAVE, "dave")
    assert review.status == "applied" and promotion is not None
    assert (promotion.record.previous_version, promotion.record.environment) == (None, "qa")
    assert storage.get_in_environment(COPY, "support-chat", "qa").version == 1
    newest = storage.request_review(COPY, "greeting", "1", "canary", PROMOTER)
    assert storage.list_reviews(COPY, limit=1).items == [newest]
    storage.delete_environment(COPY, "canary")
    assert storage.get_review(COPY, opened.review_id).status == "cancelled"
    storage.delete_environment(COPY, "qa")
    assert storage.get_version(COPY, "greeting", "4").environments == ["staging"]
    # The original is untouched by all of it.
    assert storage.export_org(ORG) == original


def test_an_environment_deleted_during_an_export_stays_for_what_was_read_with_it(
    storage: Storage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis and SQL read each prompt in its own step: when qa goes between the prompts
    and the environments, the prompts read before still name it, and so does the
    snapshot (memory exports in one step, so there the deletion waits)."""
    released(storage, ORG, clock)
    listed = storage.list_environments
    calls: list[None] = []

    def list_environments(org: str) -> list[Environment]:
        calls.append(None)
        if len(calls) == 2:
            storage.delete_environment(org, "qa")
        return listed(org)

    monkeypatch.setattr(storage, "list_environments", list_environments)
    snapshot = storage.export_org(ORG)
    names = [e.name for e in snapshot.environments]
    placed = {env for p in snapshot.prompts for v in p.versions for env in v.placements}
    waiting = {r.environment for r in snapshot.reviews if r.status == "open"}
    assert placed | waiting <= set(names)
    assert set(names) >= {"production", "staging", "canary"}
    if calls:  # the Redis and SQL exports
        assert names[-1] == "qa" and "qa" in placed


@pytest.mark.parametrize("direction", ["out of this backend", "into this backend"])
def test_a_snapshot_moves_between_backends(
    storage: Storage, clock: FakeClock, direction: str
) -> None:
    """Exported on one backend and imported on another, nothing changes."""
    other = MemoryStorage(clock=clock.utc)
    source, target = (storage, other) if direction == "out of this backend" else (other, storage)
    original = released(source, ORG, clock)
    target.import_org(original)
    assert target.export_org(ORG) == original
    assert target.list_reviews(ORG) == source.list_reviews(ORG)
    assert target.list_history(ORG, "greeting") == source.list_history(ORG, "greeting")
    assert target.get_in_environment(ORG, "greeting", "qa").version == 4


def test_a_snapshot_without_environments_or_reviews_restores_production_alone(
    storage: Storage, clock: FakeClock
) -> None:
    """What a backup written before environments and reviews reads as."""
    populate(storage, ORG, clock)
    old = replace(storage.export_org(ORG), environments=(), reviews=())
    storage.import_org(moved(old, COPY))
    assert storage.list_environments(COPY) == [default_production()]
    assert storage.list_reviews(COPY).items == []
    assert storage.export_org(COPY) == replace(
        moved(old, COPY), environments=(default_production(),)
    )
    created = storage.create_environment(COPY, "staging")
    assert storage.list_environments(COPY) == [default_production(), created]


def test_restored_environments_replace_those_an_empty_org_kept(
    storage: Storage, clock: FakeClock
) -> None:
    original = released(storage, ORG, clock)
    storage.create_environment(COPY, "leftover")
    storage.update_environment(COPY, "production", required_approvals=3)
    storage.import_org(moved(original, COPY))
    assert storage.list_environments(COPY) == list(original.environments)


def test_restore_writes_every_release_key_as_the_operations_left_it(
    redis_storage: BaseRedisStorage[Any], clock: FakeClock
) -> None:
    released(redis_storage, ORG, clock)
    redis_storage.import_org(moved(redis_storage.export_org(ORG), COPY))
    original = decoded(raw(redis_storage, ORG))
    assert decoded(raw(redis_storage, COPY)) == original
    for key in ("envs", "env-order", "reviews", "open-reviews", "review-seq"):
        assert original[key]


def decoded(found: dict[str, object]) -> dict[str, object]:
    """JSON values parsed: Lua's cjson and Python spell the same JSON differently (key
    order, an empty list as {}, and some Lua runtimes leave null fields out)."""

    def value(text: object) -> object:
        parsed = json.loads(text) if isinstance(text, str) else text
        if isinstance(parsed, dict):
            # A review holds lists, never objects: an empty one is cjson's empty list.
            parsed = {name: [] if v == {} else v for name, v in parsed.items() if v is not None}
        return parsed

    out: dict[str, object] = {}
    for key, found_value in found.items():
        if key == "envs" or key.startswith("review:") or key == "review-seq":
            if isinstance(found_value, dict):
                found_value = {name: value(text) for name, text in found_value.items()}
            else:
                found_value = value(found_value)
        out[key] = found_value
    return out
