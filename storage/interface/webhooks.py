"""Webhook subscriptions and their delivery queue (written once in storage/webhook_front.py
over each backend's primitives)."""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Any

from storage.interface.core import StorageCore
from storage.webhook_records import Delivery, DeliveryTask, Webhook

# The delivery attempts each webhook keeps in its history, newest first.
DELIVERY_HISTORY_SIZE = 100
# The webhooks one org may have: each costs a delivery per event, and one org's slow
# receivers must stay a bounded share of the delivery workers.
MAX_WEBHOOKS = 20


class WebhookStore(StorageCore):
    """An org's webhooks, and the queue of messages to deliver to them."""

    @abc.abstractmethod
    def add_webhook(self, org: str, webhook: Webhook) -> None:
        """Subscribe ``webhook``: it gets the org's events written from now on. Raises
        TooManyWebhooks when the org has MAX_WEBHOOKS already, checked in the same
        atomic step as the addition (storage/webhook_front.py)."""

    @abc.abstractmethod
    def list_webhooks(self, org: str) -> list[Webhook]:
        """Every webhook of the org, oldest first."""

    @abc.abstractmethod
    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        """Raises WebhookNotFound."""

    @abc.abstractmethod
    def delete_webhook(self, org: str, webhook_id: str) -> None:
        """Remove the webhook and its delivery history; its pending messages are dropped
        when next claimed. Raises WebhookNotFound."""

    @abc.abstractmethod
    def webhook_orgs(self) -> list[str]:
        """The orgs that have (or had) webhooks: where delivery workers look for work."""

    @abc.abstractmethod
    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        """Queue one message that is not from the event log (a ``ping``) for one webhook.
        Raises WebhookNotFound."""

    @abc.abstractmethod
    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        """Up to ``limit`` messages of the org for ``consumer`` to send, in one step:

        * events written since the last claim become one message per webhook that wants
          them (``message_id`` made from the webhook and the event, so it is the same on
          every attempt);
        * retries whose time (:meth:`finish_delivery`, on this storage's clock) has come
          are queued again;
        * messages claimed more than ``lease`` seconds ago and never finished (their
          worker died) are claimed again, then new ones.

        Messages of webhooks deleted since they were queued are dropped, not returned.
        """

    @abc.abstractmethod
    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        """Record ``attempt`` in the webhook's history and take ``task`` off the queue;
        with ``retry_at``, queue the message again for then (attempt + 1). Nothing is
        recorded or retried for a webhook deleted meanwhile."""

    @abc.abstractmethod
    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        """The webhook's delivery attempts, newest first (at most DELIVERY_HISTORY_SIZE
        are kept). Raises WebhookNotFound."""
