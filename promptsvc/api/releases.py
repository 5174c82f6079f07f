"""Safe releases: roll production back in one step, and compare any two versions.

Guarded promotion (``expected_production_version``) is part of promote, in
promptsvc.api.versions; rollback takes the same guard.
"""

from __future__ import annotations

from typing import Any

from flask import Response

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc import actions
from promptsvc.api.common import ApiBlueprint, View, storage
from promptsvc.api.responses import DiffSchema, PromotionResultSchema
from promptsvc.api.versions import NAME_PARAM, expected
from promptsvc.auth import current_principal
from promptsvc.diffs import version_diff
from promptsvc.http import json_response
from promptsvc.inputs import DiffQuerySchema, RollbackSchema
from promptsvc.refs import version_at
from storage.contracts import breaking_changes

blp = ApiBlueprint(
    "releases",
    __name__,
    url_prefix="/api/v1/prompts",
    description="Safe releases: roll production back, compare two versions.",
)


@blp.route("/<name>/rollback", parameters=[NAME_PARAM])
class Rollback(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(RollbackSchema, required=False)
    @blp.returns(200, PromotionResultSchema)
    @blp.errors(404, 409, 413, 415)
    def post(self, body: dict[str, Any], name: str) -> Response:
        """Roll production (or another environment) back

        In one atomic step: the version that was production before the current one (or
        to_version, which must have been production at some point) becomes production
        again whatever its status now, the current production version is archived, and
        a promotion record is written (notes default to "rollback to vN"). With
        environment, the same in that environment: the version it held before (not an
        archived one) is placed there again. No review is needed, even in a protected
        environment. 409 when there is nothing to roll back to (no earlier version, or
        it was deleted; a to_version never there or there now), or when
        expected_version is given and the environment holds another version (the body
        then has current_version). 404 for an unknown environment. The body is optional.
        """
        promotion = actions.rollback(
            storage(),
            current_principal(),
            name,
            notes=body["notes"],
            to_version=body.get("to_version"),
            expected_production=expected(body),
            environment=body["environment"],
        )
        return json_response(promotion.to_json())


@blp.route("/<name>/diff", parameters=[NAME_PARAM])
class Diff(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(DiffQuerySchema, location="query")
    @blp.returns(200, DiffSchema)
    @blp.errors(404)
    def get(self, query: dict[str, Any], name: str) -> Response:
        """Compare two versions

        from and to are each a version number, a version id (v_...), production or
        latest. The answer has a unified diff of the contents (3 lines of context; chat
        prompts one block per message) and the variables, metadata and tags added,
        removed or changed; the variable contracts' entries added, removed or changed
        (variables_schema); and breaking: what promoting to in place of from would
        break, as the promotion check finds it (empty when nothing). 404 names the
        prompt or version that is missing.
        """
        backend, org = storage(), current_principal().org
        old = version_at(backend, org, name, query["from_"])
        new = version_at(backend, org, name, query["to"])
        body = version_diff(old.to_json(), new.to_json())
        body["breaking"] = [change.to_json() for change in breaking_changes(old, new)]
        return json_response(body)
