"""The primitives under storage's fronts (storage/webhook_front.py, event_front.py,
archive_front.py), on every backend, and the fronts' pure rules."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

from storage import Storage
from storage.archive_front import environments_of_export, restore_plan
from storage.archive_records import OrgSnapshot
from storage.event_records import Event
from storage.ids import event_position
from storage.records import PRODUCTION, Environment
from storage.sql.storage import SqlStorage
from storage.webhook_front import fan_out
from storage.webhook_records import Delivery, DeliveryTask, Webhook
from tests.clock import FakeClock

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def front(storage: Storage, concern: str) -> Any:
    """The object that holds a front's primitives: the SQL backend's concern object."""
    return getattr(storage, concern) if isinstance(storage, SqlStorage) else storage


def hook(clock: FakeClock, n: int, events: tuple[str, ...] = ("*",)) -> Webhook:
    return Webhook(
        f"wh_{n:032x}", f"https://example.com/{n}", events, None, "whsec_eA==", clock.utc()
    )


def event(event_id: str, kind: str, clock: FakeClock) -> Event:
    return Event(event_id, kind, "p1", "greet", None, None, None, None, None, clock.utc(), None)


def test_fan_out_gives_one_message_per_wanting_webhook_newer_than_its_since(
    clock: FakeClock,
) -> None:
    every, promoted = hook(clock, 1), hook(clock, 2, ("version.promoted",))
    events = [event("5-0", "prompt.created", clock), event("6-1", "version.promoted", clock)]
    tasks = fan_out(events, [(every, (5, 0)), (promoted, (0, 0))])
    assert [(t.webhook_id, t.event_id, t.attempt) for t in tasks] == [
        (every.webhook_id, "6-1", 1),
        (promoted.webhook_id, "6-1", 1),
    ]
    assert tasks[0].payload == events[1].to_json()
    assert fan_out(events, []) == []


def test_restore_plan_derives_what_every_backend_writes(clock: FakeClock) -> None:
    staging = Environment("staging", 1, None, clock.utc())
    changed = Environment(PRODUCTION, 2, None, clock.utc())
    plan = restore_plan(OrgSnapshot(ORG, (), (), (), (changed, staging)))
    assert plan.environments == ((0, changed), (2, staging))
    default = Environment(PRODUCTION, 0, None, None)
    assert restore_plan(OrgSnapshot(ORG, (), (), (), (default,))).environments == ()
    gone = Environment("qa", 0, None, None)
    assert environments_of_export([gone, staging], [staging]) == (staging, gone)


def test_add_webhook_primitive_refuses_past_room(storage: Storage, clock: FakeClock) -> None:
    hooks = front(storage, "webhooks")
    assert hooks._add_webhook(ORG, hook(clock, 1), 1) is True
    assert hooks._add_webhook(ORG, hook(clock, 2), 1) is False
    assert [w.webhook_id for w in storage.list_webhooks(ORG)] == [hook(clock, 1).webhook_id]


def test_webhook_primitives_answer_for_a_missing_webhook(
    storage: Storage, clock: FakeClock
) -> None:
    hooks, missing = front(storage, "webhooks"), hook(clock, 9).webhook_id
    task = DeliveryTask("", missing, "msg_x", None, "ping", 1, {"type": "ping"})
    assert hooks._delete_webhook(ORG, missing) is False
    assert hooks._enqueue(ORG, task) is False
    assert hooks._deliveries(ORG, missing, 10) is None


def test_finish_primitive_is_idempotent_and_holds_the_retry(
    storage: Storage, clock: FakeClock
) -> None:
    hooks, webhook = front(storage, "webhooks"), hook(clock, 1)
    storage.add_webhook(ORG, webhook)
    storage.enqueue_message(ORG, webhook.webhook_id, "msg_1", "ping", {"type": "ping"})
    (task,) = storage.claim_deliveries(ORG, "w1", 10, 60.0)
    failed = Delivery(webhook.webhook_id, "msg_1", None, "ping", 1, 500, None, clock.utc())
    retry = (clock.utc() + timedelta(seconds=5), replace(task, ticket="", attempt=2))
    hooks._finish(ORG, task, failed, retry)
    hooks._finish(ORG, task, failed, None)  # a second finish of the same claim
    assert storage.claim_deliveries(ORG, "w2", 10, 0.0) == []  # off the queue, not due
    clock.advance(5)
    (again,) = storage.claim_deliveries(ORG, "w2", 10, 60.0)
    assert (again.message_id, again.attempt) == ("msg_1", 2)
    assert hooks._deliveries(ORG, webhook.webhook_id, 1) == [failed]


def test_event_primitives_read_after_a_position_and_wait_at_most(storage: Storage) -> None:
    events = front(storage, "events")
    storage.create_prompt(ORG, "greet", actor=USER)
    (created,) = events._read_events(ORG, (0, 0), 10)
    assert created.type == "prompt.created"
    started = time.monotonic()
    newest = event_position(created.id)
    events._await_events(ORG, newest, 0.2)  # nothing after it: returns after the wait
    assert time.monotonic() - started < 5
    assert events._read_events(ORG, newest, 10) == []


def test_archive_primitives_refuse_a_non_empty_org(storage: Storage) -> None:
    archive: Any = storage  # (every backend's storage is its ArchiveFront)
    storage.create_prompt(ORG, "greet", actor=USER)
    assert archive._export_prompt(ORG, "p_missing") is None
    (ref,) = archive._prompt_refs(ORG)
    snapshot = storage.export_org(ORG)
    assert archive._restore(restore_plan(snapshot)) is False
    assert storage.export_org(ORG) == snapshot
    assert archive._export_prompt(ORG, ref)[0] == snapshot.prompts[0]
