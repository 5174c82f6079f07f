"""Promotion history of a prompt (docs/api.md section 7)."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app

from identity.roles import SERVICE_READ
from promptsvc import actions
from promptsvc.api.common import ApiBlueprint, View, names, storage
from promptsvc.api.responses import EndedRolloutListSchema, HistoryPageSchema
from promptsvc.api.versions import NAME_PARAM
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import LimitQuerySchema, PageQuerySchema
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


@blp.route("/<name>/history/rollouts", parameters=[NAME_PARAM])
class RolloutHistory(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(LimitQuerySchema, location="query")
    @blp.returns(200, EndedRolloutListSchema)
    @blp.errors(404)
    def get(self, query: dict[str, Any], name: str) -> Response:
        """List ended rollouts, newest first

        Each rollout of the prompt that ended: completed, or aborted, with why
        (reason guard and the guard's figures, or manual and who aborted it). Read from
        the org's event log: as far back as it keeps (at least the newest 10,000 events).
        Promotions, a completion's included, are in .../history.
        """
        ended = actions.ended_rollouts(storage(), current_principal(), name, query["limit"])
        who = names()
        items = [who.beside(rollout.to_json(), "ended_by") for rollout in ended]
        return json_response({"items": items})
