"""What only the Redis backend can get wrong: keys, scripts, round trips, outages."""

from __future__ import annotations

import re
import socket
from datetime import timedelta
from importlib import resources
from typing import Any

import fakeredis
import pytest
import redis
from redis.connection import AbstractConnection
from redis.crc import key_slot

from storage import (
    ApiKey,
    AuthorizationCode,
    DeviceAuthorization,
    PromptNotFound,
    RealmSession,
    RefreshToken,
    SigningKey,
    StorageUnavailable,
    User,
    VersionFrozen,
    rfc3339,
    storage_from_url,
)
from storage.redis import BaseRedisStorage, RedisStorage, keys, scripts
from tests.cluster_support import LocalRedis

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
LUA = resources.files("storage.redis") / "lua"


def lua_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in LUA.iterdir() if p.name.endswith(".lua")}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on exit: nothing listens there


def populate(store: BaseRedisStorage[Any]) -> tuple[str, list[str]]:
    prompt = store.create_prompt(ORG, "greeting", "text", "d")
    ids = [store.create_version(ORG, "greeting", f"c{i}", USER).version_id for i in range(3)]
    store.promote(ORG, "greeting", "1", USER)
    store.promote(ORG, "greeting", "2", USER, notes="n")
    store.add_api_key(ApiKey(ORG, "admin", "hash", "Service Admin", USER, None, store.clock()))
    store.ensure_signing_key(SigningKey("k1", "pem", store.clock()))
    return prompt.prompt_id, ids


# --------------------------------------------------------------------------- key layout


def test_every_key_follows_the_layout(redis_storage: BaseRedisStorage[Any]) -> None:
    pid, ids = populate(redis_storage)
    history = redis_storage.client.zrange(keys.history(ORG, pid), 0, -1)
    expected = {
        keys.names(ORG),
        keys.prompt_list(ORG),
        keys.prompt(ORG, pid),
        keys.versions(ORG, pid),
        keys.status_index(ORG, pid, "draft"),
        keys.status_index(ORG, pid, "published"),
        keys.status_index(ORG, pid, "archived"),
        keys.history(ORG, pid),
        keys.events(ORG),
        keys.api_keys(ORG),
        keys.api_key(ORG, "admin"),
        keys.SIGNING_ORDER,
        keys.SIGNING_KEYS,
        keys.ORGS,
        *(keys.version(ORG, pid, vid) for vid in ids),
        *(keys.history_record(ORG, pid, hid) for hid in history),
    }
    assert len(history) == 2
    # KEYS is fine in a test of an otherwise empty db; the code never uses it.
    assert set(redis_storage.client.scan_iter()) == expected


def populate_people(store: BaseRedisStorage[Any]) -> None:
    """A user and one record of every login flow kind (a rotated refresh token too)."""
    now = store.clock()
    soon = now + timedelta(minutes=10)
    store.add_user(User(ORG, USER, "ada@example.com", "Service Admin", False, now, now, "h"))
    store.add_authorization_code(
        AuthorizationCode(ORG, "c0de", "cli", "http://127.0.0.1/cb", "openid", USER, "s1",
                          "challenge", "S256", None, now, soon)
    )  # fmt: skip
    store.add_device_authorization(
        DeviceAuthorization(ORG, "dev", "WDJBMJHT", "cli", "openid", 5, now, soon)
    )
    store.add_session(RealmSession(ORG, "s1", USER, now, soon))
    store.start_refresh_family(
        RefreshToken(ORG, "rt1", "fam", "cli", USER, "openid", "s1", now, soon)
    )
    store.rotate_refresh_token(ORG, "rt1", "rt2", soon)


PEOPLE_KEYS = {
    keys.users(ORG),
    keys.user(ORG, "ada@example.com"),
    keys.user_ids(ORG),
}
EXPIRING_KEYS = {
    keys.flow(ORG, "code", "c0de"),
    keys.flow(ORG, "device", "dev"),
    keys.flow(ORG, "user-code", "WDJBMJHT"),
    keys.flow(ORG, "session", "s1"),
    keys.flow(ORG, "refresh", "rt1"),
    keys.flow(ORG, "refresh", "rt2"),
    keys.flow(ORG, "family", "fam"),
}


def test_people_and_login_keys_follow_the_layout(redis_storage: BaseRedisStorage[Any]) -> None:
    populate_people(redis_storage)
    found = set(redis_storage.client.scan_iter())
    assert found == PEOPLE_KEYS | EXPIRING_KEYS | {keys.ORGS}


def test_login_state_expires_with_its_record(redis_storage: BaseRedisStorage[Any]) -> None:
    populate_people(redis_storage)
    for key in EXPIRING_KEYS:
        ttl = redis_storage.client.pttl(key)
        assert 0 < ttl <= 600_000, key
    for key in PEOPLE_KEYS:
        assert redis_storage.client.pttl(key) == -1, key  # users never expire


def test_an_orgs_keys_share_one_cluster_slot(redis_storage: BaseRedisStorage[Any]) -> None:
    populate(redis_storage)
    populate_people(redis_storage)
    found = set(redis_storage.client.scan_iter())
    org_keys = [k for k in found if k.startswith("ps:{acme}:")]
    global_keys = [k for k in found if k.startswith("ps:{_global}:")]
    assert len(org_keys) + len(global_keys) == len(found)
    assert {key_slot(k.encode()) for k in org_keys} == {key_slot(b"{acme}")}
    assert {key_slot(k.encode()) for k in global_keys} == {key_slot(b"{_global}")}


def test_delete_prompt_leaves_no_prompt_keys(redis_storage: BaseRedisStorage[Any]) -> None:
    populate(redis_storage)
    redis_storage.create_prompt(ORG, "other")
    redis_storage.create_version(ORG, "other", "x", USER)
    redis_storage.delete_prompt(ORG, "greeting")
    redis_storage.delete_prompt(ORG, "other")
    left = set(redis_storage.client.scan_iter())
    # The org's event log stays: it records the deletions too.
    org_keys = {keys.api_keys(ORG), keys.api_key(ORG, "admin"), keys.events(ORG)}
    assert left == {*org_keys, *global_keys()}


def test_rollouts_follow_the_layout_and_go_with_their_prompt(
    redis_storage: BaseRedisStorage[Any],
) -> None:
    pid, _ = populate(redis_storage)
    before = set(redis_storage.client.scan_iter())
    redis_storage.start_rollout(ORG, "greeting", "3", "production", 10, USER)
    assert set(redis_storage.client.scan_iter()) == {*before, keys.rollouts(ORG, pid)}
    redis_storage.delete_prompt(ORG, "greeting")
    org_keys = {keys.api_keys(ORG), keys.api_key(ORG, "admin"), keys.events(ORG)}
    assert set(redis_storage.client.scan_iter()) == {*org_keys, *global_keys()}


def global_keys() -> set[str]:
    return {keys.SIGNING_ORDER, keys.SIGNING_KEYS, keys.ORGS}


def test_a_value_that_reads_like_a_write_marker_is_stored_as_given(
    redis_storage: BaseRedisStorage[Any],
) -> None:
    # apply_change.lua reads "$seq" as the last counter only as a ZADD score.
    redis_storage.create_prompt(ORG, "greeting")
    version = redis_storage.create_version(ORG, "greeting", "x", USER)
    redis_storage.edit_version(ORG, "greeting", "1", "$seq")
    pid = version.prompt_id
    stored = redis_storage.client.hget(keys.version(ORG, pid, version.version_id), "content")
    assert stored == "$seq"


def test_a_big_prompt_is_deleted_in_one_call(redis_storage: BaseRedisStorage[Any]) -> None:
    # More versions than one DEL batch (500) and than Lua's unpack() limit.
    redis_storage.create_prompt(ORG, "big")
    script = redis_storage._scripts["create_version"]
    now = rfc3339(redis_storage.clock())
    event_keys, event_args = scripts.event_context(ORG, USER, None, now, 10_000)
    for _ in range(1200):
        vid = f"v_{_:032x}"
        fields = ["version_id", vid, "content", "c", "variables", "[]", "status", "draft"]
        fields += ["metadata", "{}", "tags", "[]", "created_by", USER]
        args = ["big", vid, "[]", *fields, "created_at", now, "updated_at", now]
        prompt_keys = [keys.names(ORG), keys.prompt_prefix(ORG)]
        script(keys=[*prompt_keys, *event_keys], args=[*args, *event_args])
    assert redis_storage.get_latest(ORG, "big").version == 1200
    redis_storage.delete_prompt(ORG, "big")
    # The set of orgs keeps the org (a superset); list_orgs leaves it out. The event
    # log stays too: it records the deletions.
    assert set(redis_storage.client.scan_iter()) == {keys.ORGS, keys.events(ORG)}
    assert redis_storage.list_orgs() == []


# --------------------------------------------------------------------------- scripts


def test_scripts_never_use_keys_or_scan() -> None:
    for name, text in lua_files().items():
        calls = re.findall(r"redis\.p?call\(\s*[\"'](\w+)[\"']", text, flags=re.IGNORECASE)
        banned = {c.upper() for c in calls} & {"KEYS", "SCAN", "HSCAN", "ZSCAN", "SSCAN"}
        assert not banned, f"{name} calls {banned}"


def test_every_script_documents_its_keys_and_argv() -> None:
    for name, text in lua_files().items():
        lines = text.splitlines()
        header = "\n".join(line for line in lines if line.startswith("--"))
        body = "\n".join(line.split("--", 1)[0] for line in lines)
        assert header.startswith(f"-- {name.removesuffix('.lua')}"), name
        # A helper put in front of scripts names the keys it reads as it reads them.
        assert ("KEYS[" if name.startswith("_") else "KEYS[1]") in header, name
        used = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", body)}
        named = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", header)}
        open_from = [int(n) for n in re.findall(r"ARGV\[(\d+)\.\.\]", header)]
        undocumented = {n for n in used - named if not any(n >= m for m in open_from)}
        assert not undocumented, f"{name}: ARGV{sorted(undocumented)} not in the header"


def test_every_script_file_is_registered(redis_storage: BaseRedisStorage[Any]) -> None:
    helpers = {"_common.lua"}
    registered = {f"{name}.lua" for name in redis_storage._scripts} | helpers
    assert registered == set(lua_files())


def test_scripts_are_reloaded_when_the_server_forgot_them() -> None:
    store = RedisStorage(fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True))
    store.create_prompt(ORG, "greeting")
    store.client.script_flush()
    store.create_version(ORG, "greeting", "x", USER)
    assert store.get_latest(ORG, "greeting").version == 1


# --------------------------------------------------------------------------- round trips


def count_round_trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every command sent by any redis-py connection: the client's pools,
    the read lane (storage/redis/read_lane.py), fakeredis and the cluster's nodes."""
    sent: list[str] = []
    original = AbstractConnection.send_packed_command

    def counting(self: AbstractConnection, command: Any, *args: Any, **kwargs: Any) -> Any:
        packed = command if isinstance(command, bytes | str) else b"".join(command)
        packed = packed.encode() if isinstance(packed, str) else packed
        sent.append(packed.split(b"\r\n")[2].decode())  # *<n> $<len> <name> ...
        return original(self, command, *args, **kwargs)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)
    return sent


@pytest.mark.parametrize(
    "read",
    [
        lambda s, pid, ids: s.get_production(ORG, "greeting"),
        lambda s, pid, ids: s.get_latest(ORG, "greeting"),
        lambda s, pid, ids: s.get_version(ORG, "greeting", "3"),
        lambda s, pid, ids: s.get_version(ORG, "greeting", ids[0]),
        lambda s, pid, ids: s.get_production(ORG, pid),
        lambda s, pid, ids: s.get_version(ORG, pid, ids[1]),
        lambda s, pid, ids: s.get_prompt(ORG, "greeting"),
        lambda s, pid, ids: s.list_versions(ORG, "greeting", status="draft"),
    ],
    ids=[
        "production",
        "latest",
        "by-number",
        "by-id",
        "production-by-prompt-id",
        "by-id-by-prompt-id",
        "prompt",
        "list-versions",
    ],
)
def test_a_read_is_one_round_trip(
    redis_storage: BaseRedisStorage[Any], monkeypatch: pytest.MonkeyPatch, read: Any
) -> None:
    pid, ids = populate(redis_storage)
    read(redis_storage, pid, ids)  # scripts load on first use; count the steady state
    sent = count_round_trips(monkeypatch)
    read(redis_storage, pid, ids)
    assert sent == ["EVALSHA"]


@pytest.mark.parametrize("environment", ["staging", "production"])
def test_an_environment_read_is_one_round_trip(
    redis_storage: BaseRedisStorage[Any], monkeypatch: pytest.MonkeyPatch, environment: str
) -> None:
    """The same lane and script as a production read: GET .../environments/{env} is as
    cheap as GET .../production."""
    populate(redis_storage)
    redis_storage.create_environment(ORG, "staging")
    redis_storage.promote(ORG, "greeting", "3", USER, environment="staging")
    first = redis_storage.get_in_environment(ORG, "greeting", environment)
    sent = count_round_trips(monkeypatch)
    again = redis_storage.get_in_environment(ORG, "greeting", environment)
    assert sent == ["EVALSHA"]
    assert again is first  # decoded once: the API's body memo hits for it


def test_a_promotion_is_a_load_and_an_apply(
    redis_storage: BaseRedisStorage[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two round trips while nothing includes the prompt: load_state.lua tells that
    too. Once a version of another prompt includes it, its includers are read after
    the load (storage/neighbours.py) for the include rules."""
    populate(redis_storage)  # versions 1 to 3, 2 in production
    for content in ("c4", "c5"):
        redis_storage.create_version(ORG, "greeting", content, USER)
    redis_storage.promote(ORG, "greeting", "3", USER)  # scripts load on first use
    sent = count_round_trips(monkeypatch)
    redis_storage.promote(ORG, "greeting", "4", USER)
    assert sent == ["EVALSHA", "EVALSHA"]
    redis_storage.create_prompt(ORG, "card")
    redis_storage.create_version(ORG, "card", "{{> greeting}} and more", USER)
    redis_storage.promote(ORG, "card", "1", USER)
    sent.clear()
    redis_storage.promote(ORG, "greeting", "5", USER)
    assert sent[:2] == ["EVALSHA", "SMEMBERS"] and len(sent) > 2
    assert redis_storage.get_production(ORG, "greeting").version == 5


@pytest.mark.redis
def test_server_counts_one_evalsha_per_read() -> None:
    # A Redis server of the test's own: the shared one counts every other client's
    # EVALSHA too (other test runs, other people), so its count proves nothing.
    local = LocalRedis().start(timeout=60)
    try:
        store = RedisStorage.from_url(local.url)
        populate(store)
        store.get_production(ORG, "greeting")
        admin = redis.Redis.from_url(local.url)

        def evalsha_calls() -> int:
            return int(admin.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

        before = evalsha_calls()
        for _ in range(50):
            store.get_production(ORG, "greeting")
        assert evalsha_calls() - before == 50
        admin.close()
        store.close()
    finally:
        local.stop()


# --------------------------------------------------------------------------- outages


def test_closed_port_is_storage_unavailable() -> None:
    store = RedisStorage.from_url(f"redis://127.0.0.1:{closed_port()}/0")
    for call in (
        store.ping,
        lambda: store.get_production(ORG, "greeting"),
        lambda: store.create_prompt(ORG, "greeting"),
        lambda: store.list_prompts(ORG),
        lambda: store.get_api_key(ORG, "admin"),
        store.signing_keys,
    ):
        with pytest.raises(StorageUnavailable) as caught:
            call()
        assert str(caught.value) == "storage unavailable"
        assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_disconnected_fakeredis_is_storage_unavailable() -> None:
    server = fakeredis.FakeServer()
    store = RedisStorage(fakeredis.FakeRedis(server=server, decode_responses=True))
    store.create_prompt(ORG, "greeting")
    server.connected = False
    with pytest.raises(StorageUnavailable):
        store.get_prompt(ORG, "greeting")
    server.connected = True
    assert store.get_prompt(ORG, "greeting").name == "greeting"


@pytest.mark.parametrize(
    "error",
    [
        redis.exceptions.BusyLoadingError("LOADING Redis is loading the dataset in memory"),
        redis.exceptions.TimeoutError("Timeout reading from 10.1.2.3:6379"),
        redis.exceptions.ClusterDownError("CLUSTERDOWN The cluster is down"),
        redis.exceptions.MasterDownError("MASTERDOWN Link with MASTER is down"),
        redis.exceptions.TryAgainError("TRYAGAIN"),
        redis.exceptions.ReadOnlyError("READONLY You can't write against a read only replica."),
        redis.exceptions.OutOfMemoryError("OOM command not allowed"),
    ],
)
def test_server_side_outages_are_storage_unavailable(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    store = RedisStorage(fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True))
    populate(store)
    store.get_production(ORG, "greeting")  # scripts loaded: the reply below is the read's

    def fail(*args: Any, **options: Any) -> Any:
        raise error

    # Where redis-py raises these: reading the reply, on the client's connections and
    # on the read lane's alike.
    monkeypatch.setattr(store.client.connection_pool.connection_class, "read_response", fail)
    for call in (
        lambda: store.get_production(ORG, "greeting"),
        lambda: store.get_version(ORG, "greeting", "1"),
        lambda: store.get_prompt(ORG, "greeting"),
        lambda: store.create_prompt(ORG, "other"),
    ):
        with pytest.raises(StorageUnavailable, match=r"^storage unavailable$"):
            call()


def test_request_errors_are_not_outages() -> None:
    store = RedisStorage(fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True))
    with pytest.raises(PromptNotFound):
        store.get_production(ORG, "greeting")


# --------------------------------------------------------------------------- construction


def test_from_url_defaults_to_short_timeouts() -> None:
    store = RedisStorage.from_url("redis://127.0.0.1:6379/3")
    options = store.client.connection_pool.connection_kwargs
    assert options["socket_connect_timeout"] == 1.0 and options["socket_timeout"] == 2.0
    assert options["decode_responses"] is True and options["db"] == 3
    store.close()


def test_url_options_win() -> None:
    store = RedisStorage.from_url(
        "redis://127.0.0.1:6379/0?socket_timeout=5&socket_connect_timeout=3"
    )
    options = store.client.connection_pool.connection_kwargs
    assert options["socket_timeout"] == 5.0 and options["socket_connect_timeout"] == 3.0
    store.close()


def test_storage_from_url_picks_redis() -> None:
    for url in ("redis://127.0.0.1:6379/0", "rediss://127.0.0.1:6380/0"):
        store = storage_from_url(url)
        assert isinstance(store, RedisStorage)
        store.close()


def test_client_must_decode_responses() -> None:
    with pytest.raises(ValueError, match="decode_responses"):
        RedisStorage(fakeredis.FakeRedis(server=fakeredis.FakeServer()))


def test_versions_stored_before_the_frozen_flag_get_it_at_the_first_change(
    redis_storage: BaseRedisStorage[Any],
) -> None:
    """docs/api.md section 5, rule 2a, for data written before the flag: a version a record
    names stays frozen although nothing else says it was ever placed."""
    store = redis_storage
    pid = store.create_prompt(ORG, "p").prompt_id
    store.create_environment(ORG, "staging")
    for content in ("a", "b", "c"):
        store.create_version(ORG, "p", content, USER)
    store.promote(ORG, "p", "2", USER, environment="staging")
    store.promote(ORG, "p", "3", USER, environment="staging")
    # As stored before: no flag on any version, no revision on the prompt.
    for vid in store.client.zrange(keys.versions(ORG, pid), 0, -1):
        store.client.hdel(keys.version(ORG, pid, vid), "frozen")
    store.client.hdel(keys.prompt(ORG, pid), "rev")
    assert not store.get_version(ORG, "p", "2").frozen  # placed once, only history says so
    with pytest.raises(VersionFrozen):
        store.edit_version(ORG, "p", "2", "changed")
    assert store.get_version(ORG, "p", "2").frozen
    assert not store.get_version(ORG, "p", "1").frozen
    assert store.edit_version(ORG, "p", "1", "changed").content == "changed"
