"""Webhooks and their delivery queue: the primitives of storage/webhook_front.py.

A claim is one transaction: fan-out from the org's locked ``webhook_cursors`` row, due
retries, then messages nobody holds (or held past the lease); on PostgreSQL concurrent
workers pass over each other's rows (``FOR UPDATE SKIP LOCKED``).
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, func, insert, or_, select, update

from storage.interface import DELIVERY_HISTORY_SIZE
from storage.sql import dialect
from storage.sql.core import Concern, event_record
from storage.sql.events import events_after
from storage.sql.rows import values_of
from storage.sql.tables import (
    deliveries,
    delivery_queue,
    event_logs,
    webhook_cursors,
    webhooks,
)
from storage.stored import decoded
from storage.webhook_front import Retry, WebhookFront, fan_out
from storage.webhook_records import Delivery, DeliveryTask, Webhook

# The queue's columns that are DeliveryTask's fields as they are.
_TASK_COLUMNS = ("webhook_id", "message_id", "event_id", "event_type", "attempt")


def _queued(org: str, task: DeliveryTask, due_at: datetime | None = None) -> dict[str, Any]:
    columns = {key: getattr(task, key) for key in _TASK_COLUMNS}
    return {"org": org, **columns, "payload": json.dumps(task.payload), "due_at": due_at}


class SqlWebhooks(Concern, WebhookFront):
    @staticmethod
    def _exists(connection: Connection, org: str, webhook_id: str) -> bool:
        w = webhooks.c
        statement = select(w.seq).where(w.org == org, w.webhook_id == webhook_id)
        return connection.execute(statement).first() is not None

    def _add_webhook(self, org: str, webhook: Webhook, room: int) -> bool:
        with self.db.write() as connection:
            last = connection.execute(
                select(event_logs.c.last_ms, event_logs.c.last_seq).where(event_logs.c.org == org)
            ).first()
            ms, seq = last or (0, 0)
            # The org's first webhook starts the fan-out from now.
            dialect.insert_ignoring_conflict(connection, webhook_cursors, org=org, ms=ms, seq=seq)
            # The cursor row, locked, makes the org's additions one at a time, so the
            # count below cannot be passed by a racing one (SQLite's writer is alone).
            self._cursor(connection, org, lock=True)
            count = connection.execute(
                select(func.count()).select_from(webhooks).where(webhooks.c.org == org)
            ).scalar_one()
            if count >= room:
                return False
            row = {**values_of(webhook), "org": org, "events": json.dumps(webhook.events)}
            row.update(since_ms=ms, since_seq=seq)
            connection.execute(insert(webhooks).values(row))
            return True

    @staticmethod
    def _cursor(connection: Connection, org: str, lock: bool = False) -> tuple[int, int] | None:
        """The newest event fanned out to the org's messages (the row locked: ``lock``)."""
        c = webhook_cursors.c
        statement = select(c.ms, c.seq).where(c.org == org)
        row = connection.execute(dialect.locked(connection, statement) if lock else statement)
        found = row.first()
        return None if found is None else (found.ms, found.seq)

    @staticmethod
    def _hooks(connection: Connection, org: str) -> list[Row[Any]]:
        """The org's webhook rows, oldest first."""
        statement = select(webhooks).where(webhooks.c.org == org).order_by(webhooks.c.seq)
        return list(connection.execute(statement).all())

    def list_webhooks(self, org: str) -> list[Webhook]:
        with self.db.read() as connection:
            return [decoded(Webhook, row) for row in self._hooks(connection, org)]

    def _delete_webhook(self, org: str, webhook_id: str) -> bool:
        with self.db.write() as connection:
            # Its queued messages and delivery history go with it (ON DELETE CASCADE).
            deleted = connection.execute(
                webhooks.delete().where(webhooks.c.org == org, webhooks.c.webhook_id == webhook_id)
            )
            return bool(deleted.rowcount)

    def webhook_orgs(self) -> list[str]:
        with self.db.read() as connection:
            statement = select(webhook_cursors.c.org).order_by(webhook_cursors.c.org)
            return list(connection.execute(statement).scalars().all())

    def _enqueue(self, org: str, task: DeliveryTask) -> bool:
        with self.db.write() as connection:
            if not self._exists(connection, org, task.webhook_id):
                return False
            connection.execute(insert(delivery_queue).values(_queued(org, task)))
            return True

    def _fan_out(self, connection: Connection, org: str, limit: int) -> None:
        cursor = self._cursor(connection, org, lock=True)
        if cursor is None:
            return
        rows = connection.execute(events_after(org, cursor, limit)).all()
        if not rows:
            return
        hooks = self._hooks(connection, org)
        since = [(decoded(Webhook, hook), (hook.since_ms, hook.since_seq)) for hook in hooks]
        messages = [_queued(org, task) for task in fan_out(map(event_record, rows), since)]
        if messages:
            connection.execute(insert(delivery_queue), messages)
        last = rows[-1]
        connection.execute(
            update(webhook_cursors)
            .where(webhook_cursors.c.org == org)
            .values(ms=last.ms, seq=last.seq)
        )

    @staticmethod
    def _claimable(org: str, moment: float, lease: float, now: datetime) -> Any:
        """The org's queued messages a claim may take at ``moment`` (real clock) and
        ``now`` (storage clock): not held, or held past the lease, and due."""
        q = delivery_queue.c
        free = or_(q.claimed_at.is_(None), q.claimed_at <= moment - lease)
        due = or_(q.due_at.is_(None), q.due_at <= now)
        return (q.org == org) & free & due

    def _has_work(self, org: str, lease: float, now: datetime) -> bool:
        """Whether a claim would find anything: new events or claimable messages. Read
        first, without the write lock, since idle workers ask several times a second."""
        with self.db.read() as connection:
            cursor = self._cursor(connection, org)
            if cursor is None:
                return False
            if connection.execute(events_after(org, cursor, 1)).first():
                return True
            claimable = self._claimable(org, time.time(), lease, now)
            statement = select(delivery_queue.c.ticket).where(claimable).limit(1)
            return connection.execute(statement).first() is not None

    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        now = self.db.clock()
        if not self._has_work(org, lease, now):
            return []
        with self.db.write() as connection:
            self._fan_out(connection, org, limit)
            # Read once the write lock is held: leases count from the claim itself.
            moment = time.time()
            q = delivery_queue.c
            claimable = select(delivery_queue).where(self._claimable(org, moment, lease, now))
            # What a dead worker left past its lease first, then new messages.
            statement = claimable.order_by(q.claimed_at.is_(None), q.ticket).limit(limit)
            rows = connection.execute(dialect.locked(connection, statement, skip=True)).all()
            if rows:
                connection.execute(
                    update(delivery_queue)
                    .where(q.ticket.in_([row.ticket for row in rows]))
                    .values(claimed_at=moment, due_at=None)
                )
        return [decoded(DeliveryTask, row) for row in rows]

    def _finish(self, org: str, task: DeliveryTask, attempt: Delivery, retry: Retry | None) -> None:
        with self.db.write() as connection:
            # The attempt too: SQLite may give a deleted ticket to the retry, and a second
            # finish of this task must not take the retry off the queue.
            q = delivery_queue.c
            claim = (q.org == org) & (q.ticket == int(task.ticket)) & (q.attempt == task.attempt)
            connection.execute(delivery_queue.delete().where(claim))
            if not self._exists(connection, org, task.webhook_id):  # deleted meanwhile
                return
            connection.execute(insert(deliveries).values(org=org, **values_of(attempt)))
            # Keep the newest DELIVERY_HISTORY_SIZE (with fewer, the bound is null).
            hook = (deliveries.c.org == org, deliveries.c.webhook_id == task.webhook_id)
            newest = select(deliveries.c.seq).where(*hook).order_by(deliveries.c.seq.desc())
            oldest_kept = newest.offset(DELIVERY_HISTORY_SIZE - 1).limit(1).scalar_subquery()
            connection.execute(deliveries.delete().where(*hook, deliveries.c.seq < oldest_kept))
            if retry is not None:
                connection.execute(insert(delivery_queue).values(_queued(org, retry[1], retry[0])))

    def _deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery] | None:
        with self.db.read() as connection:
            if not self._exists(connection, org, webhook_id):
                return None
            rows = connection.execute(
                select(deliveries)
                .where(deliveries.c.org == org, deliveries.c.webhook_id == webhook_id)
                .order_by(deliveries.c.seq.desc())
                .limit(limit)
            ).all()
        return [decoded(Delivery, row) for row in rows]
