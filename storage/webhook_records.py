"""The webhook records storage keeps: subscriptions, delivery attempts and the messages
claimed for delivery (each shown to clients by its ``to_json()``, as storage/records.py
describes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.records import ALL_EVENTS
from storage.times import rfc3339


@dataclass(frozen=True, slots=True)
class Webhook:
    """A webhook subscription of one org. ``secret`` signs deliveries: it is stored, shown
    once at creation, never listed. ``events`` are event types, or ``("*",)`` for all."""

    webhook_id: str  # "wh_..."
    url: str
    events: tuple[str, ...]
    description: str | None
    secret: str  # "whsec_" + base64
    created_at: datetime

    def wants(self, event_type: str) -> bool:
        return ALL_EVENTS in self.events or event_type in self.events

    def to_json(self) -> dict[str, Any]:
        """Without the secret."""
        return {
            "webhook_id": self.webhook_id,
            "url": self.url,
            "events": list(self.events),
            "description": self.description,
            "created_at": rfc3339(self.created_at),
        }


@dataclass(frozen=True, slots=True)
class Delivery:
    """One attempt to deliver one message (an event, or a ``ping``) to one webhook.

    ``status_code`` is the receiver's answer (None when there was none) and ``error``
    says why the attempt failed without one (timeout, refused address, ...). The attempt
    delivered the message when the status is 2xx.
    """

    webhook_id: str
    message_id: str  # the webhook-id header: the same on every attempt of one message
    event_id: str | None  # None for a ping
    event_type: str
    attempt: int  # 1 for the first
    status_code: int | None
    error: str | None
    at: datetime

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    def to_json(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "event_id": self.event_id,
            "event_type": self.event_type,
            "attempt": self.attempt,
            "status_code": self.status_code,
            "error": self.error,
            "delivered": self.delivered,
            "at": rfc3339(self.at),
        }


@dataclass(frozen=True, slots=True)
class DeliveryTask:
    """A message claimed from an org's delivery queue, to send to one webhook.

    ``ticket`` names the claim for :meth:`Storage.finish_delivery` (opaque). ``payload``
    is the JSON body; ``attempt`` counts from 1.
    """

    ticket: str
    webhook_id: str
    message_id: str
    event_id: str | None
    event_type: str
    attempt: int
    payload: dict[str, Any]
