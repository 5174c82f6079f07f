"""Webhooks and their delivery queue (Storage.claim_deliveries).

The queue is a table; a claim runs in one transaction: it fans the events written
since the last claim out to messages (the org's ``webhook_cursors`` row, locked, says
how far it got), queues the retries that are due, then takes the oldest messages that
nobody holds, or whose holder's lease ran out. On PostgreSQL concurrent workers pass
over each other's rows (``FOR UPDATE SKIP LOCKED``, storage/sql/dialect.py).
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, func, insert, or_, select, update

from storage.errors import WebhookNotFound
from storage.ids import event_position, message_id
from storage.interface import DELIVERY_HISTORY_SIZE, check_webhook_room
from storage.sql import dialect
from storage.sql.core import Concern, event_record
from storage.sql.events import _after
from storage.sql.tables import (
    deliveries,
    delivery_queue,
    event_logs,
    events,
    webhook_cursors,
    webhooks,
)
from storage.webhook_records import Delivery, DeliveryTask, Webhook


def _webhook(row: Row[Any]) -> Webhook:
    return Webhook(
        webhook_id=row.webhook_id,
        url=row.url,
        events=tuple(json.loads(row.events)),
        description=row.description,
        secret=row.secret,
        created_at=row.created_at,
    )


def _task(row: Row[Any]) -> DeliveryTask:
    return DeliveryTask(
        ticket=str(row.ticket),
        webhook_id=row.webhook_id,
        message_id=row.message_id,
        event_id=row.event_id,
        event_type=row.event_type,
        attempt=row.attempt,
        payload=json.loads(row.payload),
    )


class SqlWebhooks(Concern):
    def _webhook_row(self, connection: Connection, org: str, webhook_id: str) -> Row[Any]:
        row = connection.execute(
            select(webhooks).where(webhooks.c.org == org, webhooks.c.webhook_id == webhook_id)
        ).first()
        if row is None:
            raise WebhookNotFound(webhook_id)
        return row

    def add_webhook(self, org: str, webhook: Webhook) -> None:
        with self.db.write() as connection:
            last = connection.execute(
                select(event_logs.c.last_ms, event_logs.c.last_seq).where(event_logs.c.org == org)
            ).first()
            since = (last.last_ms, last.last_seq) if last else (0, 0)
            # The org's first webhook starts the fan-out from now.
            dialect.insert_ignoring_conflict(
                connection, webhook_cursors, org=org, ms=since[0], seq=since[1]
            )
            # The cursor row, locked, makes the org's additions one at a time, so the
            # count below cannot be passed by a racing one (SQLite's writer is alone).
            connection.execute(
                dialect.locked(
                    connection, select(webhook_cursors.c.org).where(webhook_cursors.c.org == org)
                )
            )
            count = connection.execute(
                select(func.count()).select_from(webhooks).where(webhooks.c.org == org)
            ).scalar_one()
            check_webhook_room(count)
            connection.execute(
                insert(webhooks).values(
                    webhook_id=webhook.webhook_id,
                    org=org,
                    url=webhook.url,
                    events=json.dumps(list(webhook.events)),
                    description=webhook.description,
                    secret=webhook.secret,
                    created_at=webhook.created_at,
                    since_ms=since[0],
                    since_seq=since[1],
                )
            )

    def list_webhooks(self, org: str) -> list[Webhook]:
        with self.db.read() as connection:
            rows = connection.execute(
                select(webhooks).where(webhooks.c.org == org).order_by(webhooks.c.seq)
            ).all()
        return [_webhook(row) for row in rows]

    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        with self.db.read() as connection:
            return _webhook(self._webhook_row(connection, org, webhook_id))

    def delete_webhook(self, org: str, webhook_id: str) -> None:
        with self.db.write() as connection:
            self._webhook_row(connection, org, webhook_id)
            # Its queued messages and delivery history go with it (ON DELETE CASCADE).
            connection.execute(
                webhooks.delete().where(webhooks.c.org == org, webhooks.c.webhook_id == webhook_id)
            )

    def webhook_orgs(self) -> list[str]:
        with self.db.read() as connection:
            return list(
                connection.execute(select(webhook_cursors.c.org).order_by(webhook_cursors.c.org))
                .scalars()
                .all()
            )

    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        with self.db.write() as connection:
            self._webhook_row(connection, org, webhook_id)
            connection.execute(
                insert(delivery_queue).values(
                    org=org,
                    webhook_id=webhook_id,
                    message_id=message_id,
                    event_id=None,
                    event_type=event_type,
                    attempt=1,
                    payload=json.dumps(payload),
                )
            )

    def _fan_out(self, connection: Connection, org: str, limit: int) -> None:
        """Queue one message per event since the cursor and webhook that wants it."""
        cursor = connection.execute(
            dialect.locked(connection, select(webhook_cursors).where(webhook_cursors.c.org == org))
        ).first()
        if cursor is None:
            return
        rows = connection.execute(
            _after(org, (cursor.ms, cursor.seq)).order_by(events.c.ms, events.c.seq).limit(limit)
        ).all()
        if not rows:
            return
        hooks = connection.execute(
            select(webhooks).where(webhooks.c.org == org).order_by(webhooks.c.seq)
        ).all()
        messages = []
        for row in rows:
            event = event_record(row)
            position = event_position(event.id)
            for hook in hooks:
                webhook = _webhook(hook)
                if position > (hook.since_ms, hook.since_seq) and webhook.wants(event.type):
                    messages.append(
                        {
                            "org": org,
                            "webhook_id": webhook.webhook_id,
                            "message_id": message_id(webhook.webhook_id, event.id),
                            "event_id": event.id,
                            "event_type": event.type,
                            "attempt": 1,
                            "payload": json.dumps(event.to_json()),
                        }
                    )
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
            cursor = connection.execute(
                select(webhook_cursors.c.ms, webhook_cursors.c.seq).where(
                    webhook_cursors.c.org == org
                )
            ).first()
            if cursor is None:
                return False
            if connection.execute(_after(org, (cursor.ms, cursor.seq)).limit(1)).first():
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
            rows = connection.execute(
                dialect.skip_locked(
                    connection,
                    select(delivery_queue)
                    .where(self._claimable(org, moment, lease, now))
                    # What a dead worker left past its lease first, then new messages.
                    .order_by(q.claimed_at.is_(None), q.ticket)
                    .limit(limit),
                )
            ).all()
            if rows:
                connection.execute(
                    update(delivery_queue)
                    .where(q.ticket.in_([row.ticket for row in rows]))
                    .values(claimed_at=moment, due_at=None)
                )
        return [_task(row) for row in rows]

    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        with self.db.write() as connection:
            connection.execute(
                delivery_queue.delete().where(
                    delivery_queue.c.org == org, delivery_queue.c.ticket == int(task.ticket)
                )
            )
            exists = connection.execute(
                select(webhooks.c.seq).where(
                    webhooks.c.org == org, webhooks.c.webhook_id == task.webhook_id
                )
            ).first()
            if exists is None:  # deleted meanwhile
                return
            connection.execute(
                insert(deliveries).values(
                    org=org,
                    webhook_id=attempt.webhook_id,
                    message_id=attempt.message_id,
                    event_id=attempt.event_id,
                    event_type=attempt.event_type,
                    attempt=attempt.attempt,
                    status_code=attempt.status_code,
                    error=attempt.error,
                    at=attempt.at,
                )
            )
            self._trim_deliveries(connection, org, task.webhook_id)
            if retry_at is not None:
                connection.execute(
                    insert(delivery_queue).values(
                        org=org,
                        webhook_id=task.webhook_id,
                        message_id=task.message_id,
                        event_id=task.event_id,
                        event_type=task.event_type,
                        attempt=task.attempt + 1,
                        payload=json.dumps(task.payload),
                        due_at=retry_at,
                    )
                )

    @staticmethod
    def _trim_deliveries(connection: Connection, org: str, webhook_id: str) -> None:
        oldest_kept = connection.execute(
            select(deliveries.c.seq)
            .where(deliveries.c.org == org, deliveries.c.webhook_id == webhook_id)
            .order_by(deliveries.c.seq.desc())
            .offset(DELIVERY_HISTORY_SIZE - 1)
            .limit(1)
        ).scalar()
        if oldest_kept is not None:
            connection.execute(
                deliveries.delete().where(
                    deliveries.c.org == org,
                    deliveries.c.webhook_id == webhook_id,
                    deliveries.c.seq < oldest_kept,
                )
            )

    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        with self.db.read() as connection:
            self._webhook_row(connection, org, webhook_id)
            rows = connection.execute(
                select(deliveries)
                .where(deliveries.c.org == org, deliveries.c.webhook_id == webhook_id)
                .order_by(deliveries.c.seq.desc())
                .limit(min(limit, DELIVERY_HISTORY_SIZE))
            ).all()
        return [
            Delivery(
                webhook_id=row.webhook_id,
                message_id=row.message_id,
                event_id=row.event_id,
                event_type=row.event_type,
                attempt=row.attempt,
                status_code=row.status_code,
                error=row.error,
                at=row.at,
            )
            for row in rows
        ]
