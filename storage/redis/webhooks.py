"""Webhooks and their delivery queue on Redis: the primitives of storage/webhook_front.py."""

from __future__ import annotations

from typing import Any

from storage.ids import event_position
from storage.interface import DELIVERY_HISTORY_SIZE, WebhookStore
from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore, guard
from storage.webhook_front import Retry, WebhookFront, fan_out
from storage.webhook_records import Delivery, DeliveryTask, Webhook


class RedisWebhooks(RedisCore[ClientT], WebhookFront, WebhookStore):
    def _hooks(self, script: str, org: str, args: list[Any], webhook_id: str = "") -> Any:
        """A webhook script (lua/add_webhook.lua ...): every one takes the org's webhook
        keys in this order, the delivery log of ``webhook_id`` among them."""
        hook_keys = [
            keys.webhooks(org),
            keys.webhook_ids(org),
            keys.webhook_since(org),
            keys.delivery_cursor(org),
            keys.delivery_queue(org),
            keys.delivery_retries(org),
            keys.delivery_log(org, webhook_id),
            keys.events(org),
        ]
        return self._run(script, hook_keys, args)

    def _add_webhook(self, org: str, webhook: Webhook, room: int) -> bool:
        with guard():
            # A set of its own slot, outside the script (a script stays in the org's slot).
            self.client.sadd(keys.WEBHOOK_ORGS, org)
        args = [webhook.webhook_id, codec.stored_json(webhook), room]
        return bool(self._hooks("add_webhook", org, args))

    def list_webhooks(self, org: str) -> list[Webhook]:
        with guard():
            ids: list[str] = self.client.lrange(keys.webhook_ids(org), 0, -1)  # type: ignore[assignment]
            if not ids:
                return []
            found: list[str | None] = self.client.hmget(keys.webhooks(org), ids)  # type: ignore[assignment]
        return [codec.webhook(text) for text in found if text is not None]

    def _delete_webhook(self, org: str, webhook_id: str) -> bool:
        """With its delivery history; its queued messages stay until claimed, and
        claim_deliveries.lua drops them then."""
        hooks = keys.in_org(keys.webhooks(org))
        writes = [
            ["HDEL", hooks, webhook_id],
            ["LREM", keys.in_org(keys.webhook_ids(org)), "0", webhook_id],
            ["HDEL", keys.in_org(keys.webhook_since(org)), webhook_id],
            ["DEL", keys.in_org(keys.delivery_log(org, webhook_id))],
        ]
        return self._apply(org, [[hooks, webhook_id, True]], writes, [])

    def webhook_orgs(self) -> list[str]:
        with guard():
            return sorted(self.client.smembers(keys.WEBHOOK_ORGS))  # type: ignore[arg-type]

    def _enqueue(self, org: str, task: DeliveryTask) -> bool:
        hooks, queue = keys.in_org(keys.webhooks(org)), keys.in_org(keys.delivery_queue(org))
        write = ["XADD", queue, "*", "job", codec.job_value(task)]
        return self._apply(org, [[hooks, task.webhook_id, True]], [write], [])

    def _fan_out(self, org: str, limit: int) -> None:
        """Queue the messages of the events after the cursor; apply_change.lua applies
        them only if the cursor has not moved since (another worker's fan-out won)."""
        with guard():
            cursor: str | None = self.client.get(keys.delivery_cursor(org))  # type: ignore[assignment]
            if cursor is None:
                return
            entries: Any = self.client.xrange(keys.events(org), min="(" + cursor, count=limit)
            if not entries:
                return
            # Webhooks read after the events: one added later has a newer ``since``
            # than every event read, so it wants none of them.
            pipe = self.client.pipeline(transaction=False)
            pipe.hgetall(keys.webhooks(org))
            pipe.hgetall(keys.webhook_since(org))
            hooks, since = pipe.execute()
        known = [
            (codec.webhook(text), event_position(since[webhook_id]))
            for webhook_id, text in hooks.items()
            if webhook_id in since
        ]
        at, queue = keys.in_org(keys.delivery_cursor(org)), keys.in_org(keys.delivery_queue(org))
        writes = [
            ["XADD", queue, "*", "job", codec.job_value(task)]
            for task in fan_out(codec.events(entries), known)
        ]
        self._apply(org, [[at, None, cursor]], [*writes, ["SET", at, entries[-1][0]]], [])

    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        self._fan_out(org, limit)
        now_ms = int(self.clock().timestamp() * 1000)
        args = [consumer, limit, max(1, int(lease * 1000)), now_ms]
        flat = self._hooks("claim_deliveries", org, args)
        return [codec.task(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    def _finish(self, org: str, task: DeliveryTask, attempt: Delivery, retry: Retry | None) -> None:
        history = [codec.stored_json(attempt), DELIVERY_HISTORY_SIZE]
        again = ["", ""]
        if retry is not None:
            again = [str(int(retry[0].timestamp() * 1000)), codec.job_value(retry[1])]
        args = [task.ticket, task.webhook_id, *history, *again]
        self._hooks("finish_delivery", org, args, task.webhook_id)

    def _deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery] | None:
        with guard():
            pipe = self.client.pipeline(transaction=False)
            pipe.hexists(keys.webhooks(org), webhook_id)
            pipe.lrange(keys.delivery_log(org, webhook_id), 0, limit - 1)
            exists, found = pipe.execute()
        return [codec.delivery(text) for text in found] if exists else None
