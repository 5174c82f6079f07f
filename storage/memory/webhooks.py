"""Webhooks and their delivery queue in memory."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace
from datetime import datetime
from typing import Any

from storage.errors import WebhookNotFound
from storage.ids import event_position, message_id
from storage.interface import DELIVERY_HISTORY_SIZE, WebhookStore, check_webhook_room
from storage.memory.core import MemoryCore
from storage.memory.state import Hooks, OrgState, Queued
from storage.webhook_records import Delivery, DeliveryTask, Webhook


class MemoryWebhooks(MemoryCore, WebhookStore):
    """Webhooks and the delivery queue of each org."""

    def _hooks(self, org: str, webhook_id: str | None = None) -> Hooks:
        hooks = self._orgs.setdefault(org, OrgState()).hooks
        if webhook_id is not None and webhook_id not in hooks.webhooks:
            raise WebhookNotFound(webhook_id)
        return hooks

    def add_webhook(self, org: str, webhook: Webhook) -> None:
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            hooks = org_state.hooks
            check_webhook_room(len(hooks.webhooks))
            if not hooks.webhooks and not hooks.since:
                hooks.cursor = org_state.last_event  # the first webhook starts from now
            hooks.webhooks[webhook.webhook_id] = webhook
            hooks.since[webhook.webhook_id] = org_state.last_event
            hooks.deliveries[webhook.webhook_id] = deque(maxlen=DELIVERY_HISTORY_SIZE)

    def list_webhooks(self, org: str) -> list[Webhook]:
        with self._lock:
            return list(self._hooks(org).webhooks.values())

    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        with self._lock:
            return self._hooks(org, webhook_id).webhooks[webhook_id]

    def delete_webhook(self, org: str, webhook_id: str) -> None:
        with self._lock:
            hooks = self._hooks(org, webhook_id)
            del hooks.webhooks[webhook_id], hooks.deliveries[webhook_id]

    def webhook_orgs(self) -> list[str]:
        with self._lock:
            return [org for org, state in self._orgs.items() if state.hooks.since]

    def _queue(self, hooks: Hooks, task: DeliveryTask) -> None:
        ticket = str(next(self._tickets))
        hooks.queue[ticket] = Queued(replace(task, ticket=ticket))

    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        with self._lock:
            hooks = self._hooks(org, webhook_id)
            self._queue(
                hooks, DeliveryTask("", webhook_id, message_id, None, event_type, 1, payload)
            )

    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        with self._lock:
            hooks = self._hooks(org)
            for event in self._events_after(org, hooks.cursor, limit):
                position = event_position(event.id)
                for webhook in hooks.webhooks.values():
                    if position > hooks.since[webhook.webhook_id] and webhook.wants(event.type):
                        mid = message_id(webhook.webhook_id, event.id)
                        payload = event.to_json()
                        task = DeliveryTask(
                            "", webhook.webhook_id, mid, event.id, event.type, 1, payload
                        )
                        self._queue(hooks, task)
                hooks.cursor = position
            now, due = self.clock(), []
            for retry in hooks.retries:
                if retry[0] <= now:
                    due.append(retry)
                    self._queue(hooks, retry[1])
            for retry in due:
                hooks.retries.remove(retry)
            claimed: list[DeliveryTask] = []
            moment = time.monotonic()
            for ticket, queued in list(hooks.queue.items()):
                if len(claimed) == limit:
                    break
                if queued.task.webhook_id not in hooks.webhooks:
                    del hooks.queue[ticket]
                elif queued.claimed_at is None or moment - queued.claimed_at >= lease:
                    queued.claimed_at = moment
                    claimed.append(queued.task)
            return claimed

    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        with self._lock:
            hooks = self._hooks(org)
            hooks.queue.pop(task.ticket, None)
            history = hooks.deliveries.get(task.webhook_id)
            if history is None:  # deleted meanwhile
                return
            history.appendleft(attempt)
            if retry_at is not None:
                hooks.retries.append((retry_at, replace(task, attempt=task.attempt + 1)))

    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        with self._lock:
            return list(self._hooks(org, webhook_id).deliveries[webhook_id])[:limit]
