"""Webhooks and their delivery queue, on every backend (memory, real Redis, the local
cluster, SQLite, PostgreSQL): subscriptions, fan-out of the event log to messages,
claims, leases, retries on the storage clock, deletion while messages are pending, the
history."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from storage import (
    DELIVERY_HISTORY_SIZE,
    MAX_WEBHOOKS,
    Delivery,
    DeliveryTask,
    Storage,
    TooManyWebhooks,
    Webhook,
    WebhookNotFound,
    message_id,
)
from tests.clock import FakeClock

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
LEASE = 60.0


def hook(clock: FakeClock, n: int = 1, events: tuple[str, ...] = ("*",)) -> Webhook:
    return Webhook(
        f"wh_{n:032x}", f"https://example.com/{n}", events, None, "whsec_c2VjcmV0", clock.utc()
    )


def attempt(task: DeliveryTask, status: int | None, at_clock: FakeClock) -> Delivery:
    error = None if status else "timeout"
    return Delivery(
        task.webhook_id,
        task.message_id,
        task.event_id,
        task.event_type,
        task.attempt,
        status,
        error,
        at_clock.utc(),
    )


def promote_one(storage: Storage, name: str = "greet") -> None:
    storage.create_prompt(ORG, name, actor=USER)
    storage.create_version(ORG, name, "hi", USER)
    storage.promote(ORG, name, "1", USER)


def test_subscriptions_listed_oldest_first_and_deleted(storage: Storage, clock: FakeClock) -> None:
    first, second = hook(clock, 1), hook(clock, 2, ("version.promoted",))
    storage.add_webhook(ORG, first)
    storage.add_webhook(ORG, second)
    assert storage.list_webhooks(ORG) == [first, second]
    assert storage.get_webhook(ORG, second.webhook_id) == second
    assert storage.list_webhooks("other") == []
    assert storage.webhook_orgs() == [ORG]
    storage.delete_webhook(ORG, first.webhook_id)
    assert storage.list_webhooks(ORG) == [second]
    for call in (storage.get_webhook, storage.delete_webhook):
        with pytest.raises(WebhookNotFound):
            call(ORG, first.webhook_id)
    with pytest.raises(WebhookNotFound):
        storage.list_deliveries(ORG, first.webhook_id, 10)


def test_an_org_has_at_most_max_webhooks(storage: Storage, clock: FakeClock) -> None:
    """Checked in the same atomic step as the addition: no race can pass it."""
    for n in range(MAX_WEBHOOKS):
        storage.add_webhook(ORG, hook(clock, n))
    with pytest.raises(TooManyWebhooks):
        storage.add_webhook(ORG, hook(clock, MAX_WEBHOOKS))
    assert len(storage.list_webhooks(ORG)) == MAX_WEBHOOKS
    storage.add_webhook("globex", hook(clock, MAX_WEBHOOKS))  # per org
    storage.delete_webhook(ORG, hook(clock, 0).webhook_id)
    storage.add_webhook(ORG, hook(clock, MAX_WEBHOOKS))
    assert len(storage.list_webhooks(ORG)) == MAX_WEBHOOKS


def test_secret_is_stored_but_not_in_json(storage: Storage, clock: FakeClock) -> None:
    storage.add_webhook(ORG, hook(clock))
    (stored,) = storage.list_webhooks(ORG)
    assert stored.secret == "whsec_c2VjcmV0"
    assert "secret" not in stored.to_json()


def test_events_fan_out_to_the_webhooks_that_want_them(storage: Storage, clock: FakeClock) -> None:
    storage.create_prompt(ORG, "before", actor=USER)  # before any webhook: never delivered
    every, promotions = hook(clock, 1), hook(clock, 2, ("version.promoted",))
    storage.add_webhook(ORG, every)
    storage.add_webhook(ORG, promotions)
    promote_one(storage)
    tasks = storage.claim_deliveries(ORG, "w1", 100, LEASE)
    events = storage.events_after(ORG, "0-0", 100)[1:]
    got = {(t.webhook_id, t.event_type) for t in tasks}
    assert got == {(every.webhook_id, e.type) for e in events} | {
        (promotions.webhook_id, "version.promoted")
    }
    assert len(tasks) == len(got)
    promoted = next(t for t in tasks if t.webhook_id == promotions.webhook_id)
    event = events[-1]
    assert promoted.payload == event.to_json()
    assert promoted.event_id == event.id and promoted.attempt == 1
    assert promoted.message_id == message_id(promotions.webhook_id, event.id)
    # Claimed: nobody else gets them while the lease lasts, and nothing new came.
    assert storage.claim_deliveries(ORG, "w2", 100, LEASE) == []


def test_a_webhook_added_later_gets_only_later_events(storage: Storage, clock: FakeClock) -> None:
    early = hook(clock, 1)
    storage.add_webhook(ORG, early)
    storage.create_prompt(ORG, "one", actor=USER)
    late = hook(clock, 2)
    storage.add_webhook(ORG, late)
    storage.create_prompt(ORG, "two", actor=USER)
    tasks = storage.claim_deliveries(ORG, "w1", 100, LEASE)
    names = sorted((t.webhook_id, t.payload["prompt_name"]) for t in tasks)
    assert names == [(early.webhook_id, "one"), (early.webhook_id, "two"), (late.webhook_id, "two")]


def test_claims_are_bounded_and_each_message_claimed_once(
    storage: Storage, clock: FakeClock
) -> None:
    storage.add_webhook(ORG, hook(clock))
    for n in range(7):
        storage.create_prompt(ORG, f"p{n}", actor=USER)
    seen: list[str] = []
    for consumer in ("a", "b", "c", "d"):
        batch = storage.claim_deliveries(ORG, consumer, 3, LEASE)
        assert len(batch) <= 3
        seen += [t.message_id for t in batch]
    assert len(seen) == 7 == len(set(seen))


def test_finished_messages_leave_and_the_history_is_newest_first(
    storage: Storage, clock: FakeClock
) -> None:
    webhook = hook(clock)
    storage.add_webhook(ORG, webhook)
    storage.create_prompt(ORG, "a", actor=USER)
    storage.create_prompt(ORG, "b", actor=USER)
    first, second = storage.claim_deliveries(ORG, "w", 10, 0.001)
    storage.finish_delivery(ORG, first, attempt(first, 200, clock), None)
    clock.advance(1)
    storage.finish_delivery(ORG, second, attempt(second, 204, clock), None)
    time.sleep(0.01)  # past the lease: only unfinished messages would come back
    assert storage.claim_deliveries(ORG, "w", 10, 0.001) == []
    history = storage.list_deliveries(ORG, webhook.webhook_id, 10)
    assert [d.message_id for d in history] == [second.message_id, first.message_id]
    assert history[0] == attempt(second, 204, clock)
    assert history[0].delivered
    assert storage.list_deliveries(ORG, webhook.webhook_id, 1) == history[:1]


def test_retry_waits_for_its_time_with_the_same_message_id(
    storage: Storage, clock: FakeClock
) -> None:
    storage.add_webhook(ORG, hook(clock))
    storage.create_prompt(ORG, "a", actor=USER)
    (task,) = storage.claim_deliveries(ORG, "w", 10, LEASE)
    storage.finish_delivery(
        ORG, task, attempt(task, 500, clock), clock.utc() + timedelta(seconds=5)
    )
    clock.advance(4)
    assert storage.claim_deliveries(ORG, "w", 10, LEASE) == []
    clock.advance(1)
    (again,) = storage.claim_deliveries(ORG, "w", 10, LEASE)
    assert again.message_id == task.message_id
    assert again.payload == task.payload
    assert again.attempt == 2


def test_a_claim_past_its_lease_goes_to_another_consumer(
    storage: Storage, clock: FakeClock
) -> None:
    storage.add_webhook(ORG, hook(clock))
    storage.create_prompt(ORG, "a", actor=USER)
    lease = 0.5
    claimed_at = time.monotonic()
    (task,) = storage.claim_deliveries(ORG, "dead", 10, lease)
    # Nobody else gets it while the lease runs (leases are real time: on a loaded
    # machine the second claim may come after the lease, when it may take it).
    taken = storage.claim_deliveries(ORG, "alive", 10, lease)
    assert taken == [] or time.monotonic() - claimed_at >= lease
    time.sleep(lease + 0.1)
    (again,) = taken or storage.claim_deliveries(ORG, "alive", 10, lease)
    assert (again.message_id, again.attempt) == (task.message_id, 1)


def test_deleting_a_webhook_drops_its_pending_messages(storage: Storage, clock: FakeClock) -> None:
    gone, kept = hook(clock, 1), hook(clock, 2)
    storage.add_webhook(ORG, gone)
    storage.add_webhook(ORG, kept)
    storage.create_prompt(ORG, "a", actor=USER)
    claimed = storage.claim_deliveries(ORG, "w", 1, 0.001)
    storage.create_prompt(ORG, "b", actor=USER)
    retried = next(iter(claimed))
    storage.finish_delivery(ORG, retried, attempt(retried, 500, clock), clock.utc())
    storage.delete_webhook(ORG, gone.webhook_id)
    time.sleep(0.01)
    left = storage.claim_deliveries(ORG, "w", 100, 0.001)
    assert left and {t.webhook_id for t in left} == {kept.webhook_id}
    # Finishing a claim of a deleted webhook records nothing and queues no retry.
    storage.add_webhook(ORG, gone)
    assert storage.list_deliveries(ORG, gone.webhook_id, 10) == []


def test_ping_is_queued_for_one_webhook(storage: Storage, clock: FakeClock) -> None:
    webhook = hook(clock, 1, ("version.promoted",))
    storage.add_webhook(ORG, webhook)
    payload = {"id": "ping_1", "type": "ping"}
    storage.enqueue_message(ORG, webhook.webhook_id, "msg_ping_1", "ping", payload)
    (task,) = storage.claim_deliveries(ORG, "w", 10, LEASE)
    assert (task.message_id, task.event_id, task.event_type, task.payload) == (
        "msg_ping_1",
        None,
        "ping",
        payload,
    )
    with pytest.raises(WebhookNotFound):
        storage.enqueue_message(ORG, "wh_missing", "m", "ping", payload)


def test_history_is_bounded(storage: Storage, clock: FakeClock) -> None:
    webhook = hook(clock)
    storage.add_webhook(ORG, webhook)
    storage.create_prompt(ORG, "a", actor=USER)
    (task,) = storage.claim_deliveries(ORG, "w", 10, LEASE)
    for n in range(DELIVERY_HISTORY_SIZE + 5):
        storage.finish_delivery(ORG, task, attempt(task, 500 + n % 3, clock), None)
    history = storage.list_deliveries(ORG, webhook.webhook_id, 1000)
    assert len(history) == DELIVERY_HISTORY_SIZE
