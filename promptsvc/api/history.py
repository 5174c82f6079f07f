"""Promotion history of a prompt (docs/api.md section 7)."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app

from identity.roles import SERVICE_READ
from promptsvc.api.common import ApiBlueprint, View, storage
from promptsvc.api.responses import HistoryPageSchema
from promptsvc.api.versions import NAME_PARAM
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import PageQuerySchema
from promptsvc.names import Names

blp = ApiBlueprint(
    "history", __name__, url_prefix="/api/v1/prompts", description="Promotion history."
)


@blp.route("/<name>/history", parameters=[NAME_PARAM])
class History(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(PageQuerySchema, location="query")
    @blp.returns(200, HistoryPageSchema)
    @blp.errors(404)
    def get(self, query: dict[str, Any], name: str) -> Response:
        """List promotions, newest first

        One record per promotion: who promoted which version (their user id, and
        their name as the console shows it), when, what was in production before, and
        the notes.
        """
        org = current_principal().org
        page = storage().list_history(org, name, query["limit"], query["cursor"])
        who = Names(current_app.extensions["identity"], org)
        items = [{**r.to_json(), "promoted_by_name": who(r.promoted_by)} for r in page.items]
        return json_response({"items": items, "next_cursor": page.next_cursor})
