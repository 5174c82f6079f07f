"""The service functions behind /api/v1/webhooks: create (with its secret, shown once)
and ping. Listing, deleting and the history go straight to storage.

An org has at most ``storage.MAX_WEBHOOKS`` (20) webhooks; storage refuses one more
(TooManyWebhooks, a Conflict: 409) in the same atomic step as the addition.
"""

from __future__ import annotations

import base64
import secrets
import uuid

from promptsvc.webhooks.targets import resolve
from storage import Storage, Webhook, new_id, rfc3339

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    """``whsec_`` + base64 of random bytes: the form Standard Webhooks verifiers take."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def create_webhook(
    storage: Storage,
    org: str,
    url: str,
    events: list[str],
    description: str | None,
    *,
    allow_private: bool,
) -> Webhook:
    """Check the target (UnsafeTarget: refused) and subscribe it (storage's
    TooManyWebhooks when the org has as many as it may)."""
    resolve(url, allow_private)
    webhook = Webhook(
        webhook_id=new_id("wh_"),
        url=url,
        events=tuple(dict.fromkeys(events)),
        description=description,
        secret=new_secret(),
        created_at=storage.clock(),
    )
    storage.add_webhook(org, webhook)
    return webhook


def send_ping(storage: Storage, org: str, webhook_id: str) -> str:
    """Queue a ``ping`` message for the webhook (WebhookNotFound); its message id."""
    ping_id = uuid.uuid4().hex
    message_id = f"msg_ping_{ping_id}"
    payload = {
        "id": f"ping_{ping_id}",
        "type": "ping",
        "webhook_id": webhook_id,
        "at": rfc3339(storage.clock()),
    }
    storage.enqueue_message(org, webhook_id, message_id, "ping", payload)
    return message_id
