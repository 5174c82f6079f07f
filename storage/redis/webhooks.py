"""Webhooks and their delivery queue on Redis."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from storage.errors import TooManyWebhooks, WebhookNotFound
from storage.interface import DELIVERY_HISTORY_SIZE, MAX_WEBHOOKS, WebhookStore
from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore, guard
from storage.webhook_records import Delivery, DeliveryTask, Webhook


class RedisWebhooks(RedisCore[ClientT], WebhookStore):
    """Webhooks and the delivery queue of each org."""

    # -- webhooks

    def add_webhook(self, org: str, webhook: Webhook) -> None:
        with guard():
            # A set of its own slot, outside the script (a script stays in the org's slot).
            self.client.sadd(keys.WEBHOOK_ORGS, org)
        added = self._run(
            "add_webhook",
            [
                keys.webhooks(org),
                keys.webhook_ids(org),
                keys.webhook_since(org),
                keys.delivery_cursor(org),
                keys.events(org),
                keys.delivery_queue(org),
            ],
            [webhook.webhook_id, codec.webhook_value(webhook), MAX_WEBHOOKS],
        )
        if not added:
            raise TooManyWebhooks(MAX_WEBHOOKS)

    def list_webhooks(self, org: str) -> list[Webhook]:
        with guard():
            ids: list[str] = self.client.lrange(keys.webhook_ids(org), 0, -1)  # type: ignore[assignment]
            if not ids:
                return []
            found: list[str | None] = self.client.hmget(keys.webhooks(org), ids)  # type: ignore[assignment]
        return [codec.webhook(text) for text in found if text is not None]

    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        with guard():
            text: str | None = self.client.hget(keys.webhooks(org), webhook_id)  # type: ignore[assignment]
        if text is None:
            raise WebhookNotFound(webhook_id)
        return codec.webhook(text)

    def delete_webhook(self, org: str, webhook_id: str) -> None:
        hook_keys = [keys.webhooks(org), keys.webhook_ids(org), keys.webhook_since(org)]
        log = keys.delivery_log(org, webhook_id)
        if not self._run("delete_webhook", [*hook_keys, log], [webhook_id]):
            raise WebhookNotFound(webhook_id)

    def webhook_orgs(self) -> list[str]:
        with guard():
            return sorted(self.client.smembers(keys.WEBHOOK_ORGS))  # type: ignore[arg-type]

    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        job = codec.job_value(
            DeliveryTask("", webhook_id, message_id, None, event_type, 1, payload)
        )
        queue_keys = [keys.webhooks(org), keys.delivery_queue(org)]
        if not self._run("enqueue_message", queue_keys, [webhook_id, job]):
            raise WebhookNotFound(webhook_id)

    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        now_ms = int(self.clock().timestamp() * 1000)
        flat = self._run(
            "claim_deliveries",
            [
                keys.events(org),
                keys.webhooks(org),
                keys.webhook_since(org),
                keys.delivery_cursor(org),
                keys.delivery_queue(org),
                keys.delivery_retries(org),
            ],
            [consumer, limit, max(1, int(lease * 1000)), now_ms],
        )
        return [codec.task(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        retry = ["", ""]
        if retry_at is not None:
            again = codec.job_value(replace(task, attempt=task.attempt + 1))
            retry = [str(int(retry_at.timestamp() * 1000)), again]
        self._run(
            "finish_delivery",
            [
                keys.delivery_queue(org),
                keys.delivery_retries(org),
                keys.webhooks(org),
                keys.delivery_log(org, task.webhook_id),
            ],
            [
                task.ticket,
                task.webhook_id,
                codec.delivery_value(attempt),
                DELIVERY_HISTORY_SIZE,
                *retry,
            ],
        )

    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        with guard():
            pipe = self.client.pipeline(transaction=False)
            pipe.hexists(keys.webhooks(org), webhook_id)
            pipe.lrange(keys.delivery_log(org, webhook_id), 0, limit - 1)
            exists, found = pipe.execute()
        if not exists:
            raise WebhookNotFound(webhook_id)
        return [codec.delivery(text) for text in found]
