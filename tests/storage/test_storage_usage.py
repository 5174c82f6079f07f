"""Usage counters and guards on every backend (storage/interface/usage.py): reports add
to hourly and daily buckets and to a rollout's arms, unknown prompts and versions are
skipped, old buckets go by the retention rule, guards are kept by id, and a guard's
abort names itself in ``rollout.aborted`` and happens once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storage import PromptNotFound, RolloutNotFound, Storage
from storage.usage_records import Counts, Guard, UsageItem
from tests.clock import FakeClock

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


@pytest.fixture
def prompt_id(storage: Storage) -> str:
    """Prompt "greeting" with versions 1 and 2, version 1 in production."""
    found = storage.create_prompt(ORG, "greeting")
    storage.create_version(ORG, "greeting", "one", USER)
    storage.create_version(ORG, "greeting", "two", USER)
    storage.promote(ORG, "greeting", "1", USER)
    return found.prompt_id


def hours(storage: Storage, start: datetime, end: datetime) -> list[tuple[object, ...]]:
    return [
        (
            r.bucket_start,
            r.version,
            r.environment,
            r.rollout_id,
            r.arm,
            r.counts.renders,
            r.counts.ok,
            r.counts.errors,
        )
        for r in storage.read_usage(ORG, "greeting", start, end, "hour")
    ]


def test_reports_add_to_the_bucket_of_the_hour_and_the_day(
    storage: Storage, prompt_id: str, clock: FakeClock
) -> None:
    item = UsageItem(prompt_id, 1, "production", renders=5, ok=3, errors=1)
    assert storage.record_usage(ORG, [item, item]) == 0
    clock.advance(3600)
    scored = UsageItem(prompt_id, 2, None, renders=2, score_sum=1.5, score_count=2)
    storage.record_usage(ORG, [scored])
    hour = datetime(2026, 1, 2, 3, tzinfo=UTC)
    day = datetime(2026, 1, 2, tzinfo=UTC)
    assert hours(storage, hour, hour + timedelta(hours=2)) == [
        (hour, 1, "production", None, None, 10, 6, 2),
        (hour + timedelta(hours=1), 2, None, None, None, 2, 0, 0),
    ]
    # The until bound is exclusive; since falls in its bucket.
    assert hours(storage, hour + timedelta(minutes=30), hour + timedelta(hours=1)) == [
        (hour, 1, "production", None, None, 10, 6, 2)
    ]
    daily = storage.read_usage(ORG, prompt_id, day, day + timedelta(days=1), "day")
    assert [(r.bucket_start, r.version, r.counts.renders) for r in daily] == [
        (day, 1, 10),
        (day, 2, 2),
    ]
    assert daily[1].to_json()["score_avg"] == 0.75
    assert daily[0].to_json()["score_avg"] is None


def test_unknown_prompts_and_versions_are_skipped(storage: Storage, prompt_id: str) -> None:
    items = [
        UsageItem(prompt_id, 1, renders=1),
        UsageItem(prompt_id, 9, renders=1),
        UsageItem("pmt_" + "0" * 32, 1, renders=1),
    ]
    assert storage.record_usage(ORG, items) == 2
    assert storage.record_usage("other-org", [UsageItem(prompt_id, 1, renders=1)]) == 1
    now = datetime(2026, 1, 2, 3, tzinfo=UTC)
    found = storage.read_usage(ORG, "greeting", now, now + timedelta(hours=1), "hour")
    assert [r.counts.renders for r in found] == [1]
    with pytest.raises(PromptNotFound):
        storage.read_usage(ORG, "nothing", now, now, "hour")


def test_the_retention_rule_drops_old_buckets(
    storage: Storage, prompt_id: str, clock: FakeClock
) -> None:
    start = clock.now
    storage.record_usage(ORG, [UsageItem(prompt_id, 1, renders=1)])
    clock.advance(timedelta(days=31).total_seconds())
    storage.record_usage(ORG, [UsageItem(prompt_id, 1, renders=2)])
    long_ago = start - timedelta(days=1)
    hourly = storage.read_usage(ORG, "greeting", long_ago, start + timedelta(days=1), "hour")
    assert hourly == []  # the first report's hour is past 30 days
    daily = storage.read_usage(ORG, "greeting", long_ago, clock.now + timedelta(days=1), "day")
    assert [r.counts.renders for r in daily] == [1, 2]


def test_a_rollouts_arms_count_what_was_reported_for_it(storage: Storage, prompt_id: str) -> None:
    rollout = storage.start_rollout(ORG, "greeting", "2", "production", 50, USER)
    rid = rollout.rollout_id
    storage.record_usage(
        ORG,
        [
            UsageItem(prompt_id, 1, "production", rid, "baseline", 4, 3, 1, 1.0, 2),
            UsageItem(prompt_id, 2, "production", rid, "candidate", 2, 1, 1, 0.0, 0),
            UsageItem(prompt_id, 2, "production", rid, "candidate", 1, 1, 0, 0.5, 1),
        ],
    )
    assert storage.rollout_arms(ORG, rid) == {
        "baseline": Counts(4, 3, 1, 1.0, 2),
        "candidate": Counts(3, 2, 1, 0.5, 1),
    }
    assert storage.rollout_arms(ORG, "ro_other") == {}


def test_guards_are_kept_by_id(storage: Storage) -> None:
    guard = Guard("error_rate", 0.05, 20)
    assert storage.get_guard(ORG, "ro_1") is None
    storage.set_guard(ORG, "ro_1", guard)
    storage.set_guard(ORG, "ro_1", Guard("score", 0.1, 10))
    assert storage.get_guard(ORG, "ro_1") == Guard("score", 0.1, 10)
    assert storage.get_guard("other-org", "ro_1") is None
    storage.set_guard(ORG, "ro_1", None)
    assert storage.get_guard(ORG, "ro_1") is None


def test_a_guards_abort_says_why_and_ends_the_rollout_once(
    storage: Storage, prompt_id: str
) -> None:
    rollout = storage.start_rollout(ORG, "greeting", "2", "production", 50, USER)
    figures = {
        "metric": "error_rate",
        "threshold": 0.1,
        "baseline": 0.0,
        "candidate": 0.5,
        "samples": 10,
    }
    rid = rollout.rollout_id
    storage.abort_rollout(ORG, "greeting", "production", rollout_id=rid, guard=figures)
    with pytest.raises(RolloutNotFound):
        storage.abort_rollout(ORG, "greeting", "production", rollout_id=rid, guard=figures)
    aborted = [e for e in storage.events_after(ORG, "0-0", 100) if e.type == "rollout.aborted"]
    assert len(aborted) == 1
    assert (aborted[0].reason, aborted[0].guard) == ("guard", figures)
    assert aborted[0].to_json()["guard"] == figures
    assert storage.read_environment(ORG, "greeting", "production").version == 1


def test_a_callers_abort_is_manual(storage: Storage, prompt_id: str) -> None:
    storage.start_rollout(ORG, "greeting", "2", "production", 50, USER)
    storage.abort_rollout(ORG, "greeting", "production", actor=USER)
    (aborted,) = [e for e in storage.events_after(ORG, "0-0", 100) if e.type == "rollout.aborted"]
    assert aborted.to_json()["reason"] == "manual"
    assert aborted.to_json()["guard"] is None
