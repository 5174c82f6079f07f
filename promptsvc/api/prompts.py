"""Prompts: create, list, get and delete (docs/api.md section 7)."""

from __future__ import annotations

from typing import Any

from flask import Response

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc import actions
from promptsvc.api.common import ApiBlueprint, View, storage
from promptsvc.api.responses import PromptPageSchema, PromptSchema
from promptsvc.api.versions import NAME_PARAM
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import PageQuerySchema, PromptCreateSchema

blp = ApiBlueprint(
    "prompts",
    __name__,
    url_prefix="/api/v1/prompts",
    description="Create, list and delete prompts.",
)


@blp.route("")
class Prompts(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(PageQuerySchema, location="query")
    @blp.returns(200, PromptPageSchema)
    def get(self, query: dict[str, Any]) -> Response:
        """List prompts

        Ordered by name; paginated with limit and cursor.
        """
        page = storage().list_prompts(current_principal().org, query["limit"], query["cursor"])
        return json_response(
            {"items": [p.to_json() for p in page.items], "next_cursor": page.next_cursor}
        )

    @blp.requires(SERVICE_WRITE)
    @blp.arguments(PromptCreateSchema)
    @blp.returns(201, PromptSchema)
    @blp.errors(409, 413, 415)
    def post(self, body: dict[str, Any]) -> Response:
        """Create a prompt

        409 when the org already has a prompt of that name.
        """
        prompt = actions.create_prompt(
            storage(), current_principal(), body["name"], body["prompt_type"], body["description"]
        )
        return json_response(prompt.to_json(), 201)


@blp.route("/<name>", parameters=[NAME_PARAM])
class PromptItem(View):
    @blp.requires(SERVICE_READ)
    @blp.returns(200, PromptSchema)
    @blp.errors(404)
    def get(self, name: str) -> Response:
        """Get a prompt"""
        return json_response(storage().get_prompt(current_principal().org, name).to_json())

    @blp.requires(SERVICE_WRITE)
    @blp.returns(204)
    @blp.errors(404)
    def delete(self, name: str) -> Response:
        """Delete a prompt

        All its versions and its promotion history go with it. A prompt created later
        under the same name starts again at version 1.
        """
        actions.delete_prompt(storage(), current_principal(), name)
        return Response(status=204)
