"""The webhook operations written once for every backend, over the primitives each
backend supplies (one atomic step each), and the fan-out rule that turns events into
messages (:func:`fan_out`)."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from storage.errors import TooManyWebhooks, WebhookNotFound
from storage.event_records import Event
from storage.ids import event_position, message_id
from storage.interface.webhooks import DELIVERY_HISTORY_SIZE, MAX_WEBHOOKS
from storage.webhook_records import Delivery, DeliveryTask, Webhook

# A retry: when it is due (storage clock) and the message of the next attempt.
Retry = tuple[datetime, DeliveryTask]


def fan_out(
    events: Iterable[Event], hooks: Sequence[tuple[Webhook, tuple[int, int]]]
) -> list[DeliveryTask]:
    """One message per event and webhook that wants it and was there before it (a
    webhook's ``since``: the log position of the org's newest event when it was added).
    ``message_id`` comes from the webhook and the event: the same on every attempt."""
    return [
        DeliveryTask(
            "", webhook.webhook_id, message_id(webhook.webhook_id, event.id), event.id,
            event.type, 1, event.to_json(),
        )
        for event in events
        for webhook, after in hooks
        if event_position(event.id) > after and webhook.wants(event.type)
    ]  # fmt: skip


class WebhookFront(abc.ABC):
    """WebhookStore's operations; a backend adds list_webhooks, webhook_orgs,
    claim_deliveries (fanning out with :func:`fan_out`) and the primitives below."""

    @abc.abstractmethod
    def list_webhooks(self, org: str) -> list[Webhook]: ...

    @abc.abstractmethod
    def _add_webhook(self, org: str, webhook: Webhook, room: int) -> bool:
        """Add unless the org has ``room`` webhooks already (checked in the same step);
        its ``since`` is the org's newest event, and the org's first webhook starts the
        fan-out cursor there."""

    @abc.abstractmethod
    def _delete_webhook(self, org: str, webhook_id: str) -> bool:
        """Remove it with its delivery history; False when there is none."""

    @abc.abstractmethod
    def _enqueue(self, org: str, task: DeliveryTask) -> bool:
        """Queue ``task`` if its webhook exists."""

    @abc.abstractmethod
    def _finish(self, org: str, task: DeliveryTask, attempt: Delivery, retry: Retry | None) -> None:
        """Take ``task`` off the queue (idempotent); unless its webhook is gone, record
        ``attempt`` keeping the newest DELIVERY_HISTORY_SIZE, and hold ``retry``."""

    @abc.abstractmethod
    def _deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery] | None:
        """The newest ``limit`` attempts; None when the webhook does not exist."""

    def add_webhook(self, org: str, webhook: Webhook) -> None:
        if not self._add_webhook(org, webhook, MAX_WEBHOOKS):
            raise TooManyWebhooks(MAX_WEBHOOKS)

    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        # An org has at most MAX_WEBHOOKS: listing them is as cheap as a lookup.
        for webhook in self.list_webhooks(org):
            if webhook.webhook_id == webhook_id:
                return webhook
        raise WebhookNotFound(webhook_id)

    def delete_webhook(self, org: str, webhook_id: str) -> None:
        if not self._delete_webhook(org, webhook_id):
            raise WebhookNotFound(webhook_id)

    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        task = DeliveryTask("", webhook_id, message_id, None, event_type, 1, payload)
        if not self._enqueue(org, task):
            raise WebhookNotFound(webhook_id)

    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        retry = None if retry_at is None else (retry_at, replace(task, attempt=task.attempt + 1))
        self._finish(org, task, attempt, retry)

    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        found = self._deliveries(org, webhook_id, min(limit, DELIVERY_HISTORY_SIZE))
        if found is None:
            raise WebhookNotFound(webhook_id)
        return found
