"""Webhooks and their delivery queue in memory: the primitives of storage/webhook_front.py."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace

from storage.ids import event_position
from storage.interface import DELIVERY_HISTORY_SIZE, WebhookStore
from storage.memory.core import MemoryCore
from storage.memory.state import Hooks, OrgState, Queued
from storage.webhook_front import Retry, WebhookFront, fan_out
from storage.webhook_records import Delivery, DeliveryTask, Webhook


class MemoryWebhooks(MemoryCore, WebhookFront, WebhookStore):
    def _hooks(self, org: str) -> Hooks:
        return self._orgs.setdefault(org, OrgState()).hooks

    def _add_webhook(self, org: str, webhook: Webhook, room: int) -> bool:
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            hooks = org_state.hooks
            if len(hooks.webhooks) >= room:
                return False
            if not hooks.webhooks and not hooks.since:
                hooks.cursor = org_state.last_event
            hooks.webhooks[webhook.webhook_id] = webhook
            hooks.since[webhook.webhook_id] = org_state.last_event
            hooks.deliveries[webhook.webhook_id] = deque(maxlen=DELIVERY_HISTORY_SIZE)
            return True

    def list_webhooks(self, org: str) -> list[Webhook]:
        with self._lock:
            return list(self._hooks(org).webhooks.values())

    def _delete_webhook(self, org: str, webhook_id: str) -> bool:
        with self._lock:
            hooks = self._hooks(org)
            hooks.deliveries.pop(webhook_id, None)
            return hooks.webhooks.pop(webhook_id, None) is not None

    def webhook_orgs(self) -> list[str]:
        with self._lock:
            return [org for org, state in self._orgs.items() if state.hooks.since]

    def _queue(self, hooks: Hooks, task: DeliveryTask) -> None:
        ticket = str(next(self._tickets))
        hooks.queue[ticket] = Queued(replace(task, ticket=ticket))

    def _enqueue(self, org: str, task: DeliveryTask) -> bool:
        with self._lock:
            hooks = self._hooks(org)
            if task.webhook_id in hooks.webhooks:
                self._queue(hooks, task)
            return task.webhook_id in hooks.webhooks

    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        with self._lock:
            hooks = self._hooks(org)
            events = self._events_after(org, hooks.cursor, limit)
            since = [(webhook, hooks.since[key]) for key, webhook in hooks.webhooks.items()]
            for task in fan_out(events, since):
                self._queue(hooks, task)
            if events:
                hooks.cursor = event_position(events[-1].id)
            now = self.clock()
            for retry in [retry for retry in hooks.retries if retry[0] <= now]:
                hooks.retries.remove(retry)
                self._queue(hooks, retry[1])
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

    def _finish(self, org: str, task: DeliveryTask, attempt: Delivery, retry: Retry | None) -> None:
        with self._lock:
            hooks = self._hooks(org)
            hooks.queue.pop(task.ticket, None)
            history = hooks.deliveries.get(task.webhook_id)
            if history is None:  # deleted meanwhile
                return
            history.appendleft(attempt)
            if retry is not None:
                hooks.retries.append(retry)

    def _deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery] | None:
        with self._lock:
            history = self._hooks(org).deliveries.get(webhook_id)
            return None if history is None else list(history)[:limit]
