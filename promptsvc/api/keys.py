"""API keys of the caller's org (docs/api.md section 7; Service Admin only).

Keys are made and revoked by the identity extension; the org is always the token's.
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app

from identity.keys import created_json
from identity.roles import SERVICE_ADMIN
from promptsvc import actions
from promptsvc.api.common import ApiBlueprint, View
from promptsvc.api.responses import ApiKeyCreatedSchema, ApiKeyListSchema
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import KeyCreateSchema

blp = ApiBlueprint(
    "keys",
    __name__,
    url_prefix="/api/v1/keys",
    description="Create, list and revoke the API keys of your org.",
)


@blp.route("")
class Keys(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.returns(200, ApiKeyListSchema)
    def get(self) -> Response:
        """List API keys

        Every key of the org, revoked ones included, oldest first. Secrets are never shown.
        """
        keys = actions.list_keys(current_app.extensions["identity"], current_principal())
        return json_response({"items": [k.to_json() for k in keys]})

    @blp.requires(SERVICE_ADMIN)
    @blp.arguments(KeyCreateSchema)
    @blp.returns(201, ApiKeyCreatedSchema)
    @blp.errors(413, 415)
    def post(self, body: dict[str, Any]) -> Response:
        """Create an API key

        The client_secret is in this response only; it cannot be retrieved later. A
        key's role is fixed: to change it, create a new key and revoke the old one. The
        key's owner (the user named by ``owner``, else the caller, or the caller key's
        owner) is the person its changes count as: that person cannot approve what the
        key created or requested.
        """
        key, secret = actions.create_key(
            current_app.extensions["identity"],
            current_principal(),
            body["role"],
            body["description"],
            owner=body["owner"],
        )
        return json_response(created_json(key, secret), 201)


@blp.route("/<client_id>")
class KeyItem(View):
    @blp.requires(SERVICE_ADMIN)
    @blp.returns(204)
    @blp.errors(404)
    def delete(self, client_id: str) -> Response:
        """Revoke an API key

        New token requests with it fail at once; tokens already issued stay valid until
        they expire.
        """
        actions.revoke_key(current_app.extensions["identity"], current_principal(), client_id)
        return Response(status=204)
