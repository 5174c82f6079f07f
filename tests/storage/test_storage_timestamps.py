"""Times: the one formatter (storage.times.rfc3339), and how every backend keeps them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from storage import ApiKey, SigningKey, Storage, rfc3339
from storage.redis import RedisStorage, keys

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
# 03:04:05.678901 UTC, written in India's offset: storage must keep the instant.
MOMENT = datetime(2026, 1, 2, 8, 34, 5, 678901, tzinfo=timezone(timedelta(hours=5, minutes=30)))
SPELLED = "2026-01-02T03:04:05.678901Z"


# --------------------------------------------------------------------------- formatter


def test_utc_with_microseconds() -> None:
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)) == SPELLED


def test_naive_is_taken_as_utc() -> None:
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, 678901)) == SPELLED


def test_zero_microseconds_are_still_written() -> None:
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05.000000Z"
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000000Z"


def test_other_offsets_are_converted_to_utc() -> None:
    assert rfc3339(MOMENT) == SPELLED
    # West of UTC, across midnight and the year.
    late = datetime(2025, 12, 31, 22, 30, 0, 1, tzinfo=timezone(timedelta(hours=-5, minutes=-30)))
    assert rfc3339(late) == "2026-01-01T04:00:00.000001Z"


def test_utc_spelled_as_a_fixed_zero_offset() -> None:
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone(timedelta(0)))) == SPELLED


def test_the_strings_sort_as_the_times_do() -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    times = [start + timedelta(microseconds=n) for n in (0, 1, 999_999, 1_000_000, 10_000_001)]
    spelled = [rfc3339(t) for t in times]
    assert sorted(spelled) == spelled and len(set(spelled)) == len(times)


@pytest.mark.parametrize(
    "moment",
    [MOMENT, datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC)],
)
def test_parsing_gives_the_same_instant_back(moment: datetime) -> None:
    parsed = datetime.fromisoformat(rfc3339(moment))
    assert parsed == moment and parsed.utcoffset() == timedelta(0)


# --------------------------------------------------------------------------- every backend


def test_every_record_keeps_its_instant(storage: Storage) -> None:
    storage.clock = lambda: MOMENT
    prompt = storage.create_prompt(ORG, "greeting")
    storage.create_version(ORG, "greeting", "Hi {{name}}", USER)
    storage.promote(ORG, "greeting", "1", USER)
    storage.add_api_key(ApiKey(ORG, "admin", "hash", "Service Admin", USER, None, MOMENT))
    storage.ensure_signing_key(SigningKey("k1", "pem", MOMENT))

    read = storage.get_prompt(ORG, prompt.prompt_id)
    version = storage.get_production(ORG, "greeting")
    record = storage.list_history(ORG, "greeting").items[0]
    key = storage.get_api_key(ORG, "admin")
    assert key is not None
    [signing] = storage.signing_keys()
    times = [read.created_at, read.updated_at, version.created_at, version.updated_at]
    times += [version.promoted_at, record.promoted_at, key.created_at, signing.created_at]
    assert times == [MOMENT] * len(times)
    shown = [read.to_json()[f] for f in ("created_at", "updated_at")]
    shown += [version.to_json()[f] for f in ("created_at", "updated_at", "promoted_at")]
    shown += [record.to_json()["promoted_at"], key.to_json()["created_at"]]
    shown += [signing.to_json(signing=True)["created_at"]]
    assert shown == [SPELLED] * len(shown)


# --------------------------------------------------------------------------- Redis


def stored_records(store: RedisStorage) -> tuple[str, str, str]:
    """A prompt with a promoted version, a key and a signing key; their ids."""
    store.clock = lambda: MOMENT
    prompt_id = store.create_prompt(ORG, "greeting").prompt_id
    version_id = store.create_version(ORG, "greeting", "Hi {{name}}", USER).version_id
    history_id = store.promote(ORG, "greeting", "1", USER).record.history_id
    store.add_api_key(ApiKey(ORG, "admin", "hash", "Service Admin", USER, None, MOMENT))
    store.ensure_signing_key(SigningKey("k1", "pem", MOMENT))
    return prompt_id, version_id, history_id


def test_redis_stores_the_same_spelling(redis_storage: RedisStorage) -> None:
    prompt_id, version_id, history_id = stored_records(redis_storage)
    client = redis_storage.client
    assert client.hmget(keys.prompt(ORG, prompt_id), "created_at", "updated_at") == [SPELLED] * 2
    fields = ("created_at", "updated_at", "promoted_at")
    assert client.hmget(keys.version(ORG, prompt_id, version_id), *fields) == [SPELLED] * 3
    assert client.hget(keys.history_record(ORG, prompt_id, history_id), "promoted_at") == SPELLED
    assert client.hget(keys.api_key(ORG, "admin"), "created_at") == SPELLED
    assert json.loads(client.hget(keys.SIGNING_KEYS, "k1"))["created_at"] == SPELLED


@pytest.mark.parametrize(
    ("old", "instant", "shown"),
    [
        (
            "2025-06-07T08:09:10.111213+00:00",
            datetime(2025, 6, 7, 8, 9, 10, 111213, tzinfo=UTC),
            "2025-06-07T08:09:10.111213Z",
        ),
        # isoformat() leaves the fraction out when it is zero.
        (
            "2025-06-07T08:09:10+00:00",
            datetime(2025, 6, 7, 8, 9, 10, tzinfo=UTC),
            "2025-06-07T08:09:10.000000Z",
        ),
    ],
)
def test_redis_reads_times_stored_as_isoformat(
    redis_storage: RedisStorage, old: str, instant: datetime, shown: str
) -> None:
    prompt_id, version_id, history_id = stored_records(redis_storage)
    client = redis_storage.client
    client.hset(keys.prompt(ORG, prompt_id), mapping={"created_at": old, "updated_at": old})
    client.hset(
        keys.version(ORG, prompt_id, version_id),
        mapping={"created_at": old, "updated_at": old, "promoted_at": old},
    )
    client.hset(keys.history_record(ORG, prompt_id, history_id), "promoted_at", old)
    client.hset(keys.api_key(ORG, "admin"), "created_at", old)
    client.hset(
        keys.SIGNING_KEYS, "k1", json.dumps({"kid": "k1", "private_pem": "pem", "created_at": old})
    )

    prompt = redis_storage.get_prompt(ORG, "greeting")
    version = redis_storage.get_version(ORG, "greeting", version_id)
    record = redis_storage.list_history(ORG, "greeting").items[0]
    key = redis_storage.get_api_key(ORG, "admin")
    assert key is not None
    [signing] = redis_storage.signing_keys()
    assert [prompt.created_at, prompt.updated_at] == [instant] * 2
    assert [version.created_at, version.updated_at, version.promoted_at] == [instant] * 3
    assert [record.promoted_at, key.created_at, signing.created_at] == [instant] * 3
    assert [version.to_json()[f] for f in ("created_at", "updated_at", "promoted_at")] == [
        shown
    ] * 3
    assert [prompt.to_json()["created_at"], record.to_json()["promoted_at"]] == [shown] * 2
