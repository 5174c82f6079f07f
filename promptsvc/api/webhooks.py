"""Webhooks of the caller's org (docs/webhooks.md; Service Admin only)."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app

from identity.roles import SERVICE_ADMIN
from promptsvc.api.common import ApiBlueprint, View
from promptsvc.api.responses import (
    DeliveryListSchema,
    PingSchema,
    WebhookCreatedSchema,
    WebhookListSchema,
)
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import DeliveryQuerySchema, WebhookCreateSchema
from promptsvc.webhooks.subscriptions import create_webhook, send_ping
from storage import Storage

blp = ApiBlueprint(
    "webhooks",
    __name__,
    url_prefix="/api/v1/webhooks",
    description="Subscribe URLs to your org's change events, signed per Standard Webhooks.",
)


def _storage() -> Storage:
    storage: Storage = current_app.extensions["promptsvc.storage"]
    return storage


@blp.route("")
class Webhooks(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.returns(200, WebhookListSchema)
    def get(self) -> Response:
        """List webhooks

        Every webhook of the org, oldest first. Secrets are never shown.
        """
        hooks = _storage().list_webhooks(current_principal().org)
        return json_response({"items": [h.to_json() for h in hooks]})

    @blp.requires(SERVICE_ADMIN)
    @blp.arguments(WebhookCreateSchema)
    @blp.returns(201, WebhookCreatedSchema)
    @blp.errors(409, 413, 415)
    def post(self, body: dict[str, Any]) -> Response:
        """Create a webhook

        The URL must be https:// and resolve only to public addresses. The secret is
        in this response only; it cannot be retrieved later. An org has at most 20
        webhooks (409 beyond).
        """
        settings = current_app.extensions["promptsvc.settings"]
        webhook = create_webhook(
            _storage(),
            current_principal().org,
            body["url"],
            body["events"],
            body["description"],
            allow_private=settings.webhook_allow_private,
        )
        return json_response({**webhook.to_json(), "secret": webhook.secret}, 201)


@blp.route("/<webhook_id>")
class WebhookItem(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.returns(204)
    @blp.errors(404)
    def delete(self, webhook_id: str) -> Response:
        """Delete a webhook

        Deliveries still pending for it stop.
        """
        _storage().delete_webhook(current_principal().org, webhook_id)
        return Response(status=204)


@blp.route("/<webhook_id>/deliveries")
class Deliveries(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.arguments(DeliveryQuerySchema, location="query")
    @blp.returns(200, DeliveryListSchema)
    @blp.errors(404)
    def get(self, query: dict[str, Any], webhook_id: str) -> Response:
        """List delivery attempts

        Newest first: the message and event, the attempt number, the receiver's status
        code or why there was none, and when.
        """
        found = _storage().list_deliveries(current_principal().org, webhook_id, query["limit"])
        return json_response({"items": [d.to_json() for d in found]})


@blp.route("/<webhook_id>/test")
class Test(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.returns(202, PingSchema)
    @blp.errors(404)
    def post(self, webhook_id: str) -> Response:
        """Send a ping

        Queues a `ping` message for the webhook; its attempts show in the deliveries.
        """
        message_id = send_ping(_storage(), current_principal().org, webhook_id)
        return json_response({"message_id": message_id}, 202)
