"""Environments of the caller's org: listed with Service Read, changed with Service Admin.

A prompt's version in an environment is read at /api/v1/prompts/{name}/environments/{env}
(promptsvc.api.versions, answered on the lean read path of promptsvc.api.reads); every
prompt's at /api/v1/environments/{env}/prompts, a page per storage round trip.
"""

from __future__ import annotations

from typing import Any

from flask import Response, request

from identity.roles import SERVICE_ADMIN, SERVICE_READ
from promptsvc import actions
from promptsvc.api.common import ApiBlueprint, View, storage
from promptsvc.api.reads import read_body
from promptsvc.api.responses import (
    EnvironmentListSchema,
    EnvironmentPromptsSchema,
    EnvironmentSchema,
)
from promptsvc.auth import current_principal
from promptsvc.http import etag_answer, etag_of, json_body, json_response
from promptsvc.inputs import (
    EnvironmentCreateSchema,
    EnvironmentPageQuerySchema,
    EnvironmentUpdateSchema,
)

blp = ApiBlueprint(
    "environments",
    __name__,
    url_prefix="/api/v1/environments",
    description="Release pointers: production and the org's other environments.",
)

ENVIRONMENT_PARAM = {
    "in": "path",
    "name": "environment",
    "required": True,
    "schema": {"type": "string"},
    "description": "Environment name",
}


@blp.route("")
class Environments(View):
    @blp.requires(SERVICE_READ)
    @blp.returns(200, EnvironmentListSchema)
    def get(self) -> Response:
        """List environments

        production first (it always exists), then the others oldest first.
        """
        found = storage().list_environments(current_principal().org)
        return json_response({"items": [e.to_json() for e in found]})

    @blp.requires(SERVICE_ADMIN)
    @blp.arguments(EnvironmentCreateSchema)
    @blp.returns(201, EnvironmentSchema)
    @blp.errors(409, 413, 415)
    def post(self, body: dict[str, Any]) -> Response:
        """Create an environment

        Names match ^[a-z][a-z0-9-]{0,31}$; latest is reserved (400). An existing
        name, production included: 409 reason exists. required_approvals 1-3 makes it
        protected: versions enter it through reviews only.
        """
        environment = actions.create_environment(
            storage(),
            current_principal(),
            body["name"],
            body["required_approvals"],
            body["description"],
        )
        return json_response(environment.to_json(), 201)


@blp.route("/<environment>", parameters=[ENVIRONMENT_PARAM])
class EnvironmentItem(View):
    @blp.requires(SERVICE_READ)
    @blp.returns(200, EnvironmentSchema)
    @blp.errors(404)
    def get(self, environment: str) -> Response:
        """Get an environment"""
        found = storage().get_environment(current_principal().org, environment)
        return json_response(found.to_json())

    @blp.requires(SERVICE_ADMIN)
    @blp.arguments(EnvironmentUpdateSchema)
    @blp.returns(200, EnvironmentSchema)
    @blp.errors(404, 413, 415)
    def patch(self, body: dict[str, Any], environment: str) -> Response:
        """Change an environment

        required_approvals and description (null or empty clears it); production too.
        Open reviews keep the number of approvals they were opened with.
        """
        description = body.get("description")
        if "description" in body and description is None:
            description = ""
        changed = actions.update_environment(
            storage(),
            current_principal(),
            environment,
            required_approvals=body.get("required_approvals"),
            description=description,
        )
        return json_response(changed.to_json())

    @blp.requires(SERVICE_ADMIN)
    @blp.returns(204)
    @blp.errors(404, 409)
    def delete(self, environment: str) -> Response:
        """Delete an environment

        Every prompt's placement in it goes with it (history records stay); its open
        reviews are cancelled, each with a review.cancelled event. production cannot be
        deleted (409).
        """
        actions.delete_environment(storage(), current_principal(), environment)
        return Response(status=204)


@blp.route("/<environment>/prompts", parameters=[ENVIRONMENT_PARAM, "IF_NONE_MATCH"])
class EnvironmentPrompts(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(EnvironmentPageQuerySchema, location="query")
    @blp.returns(200, EnvironmentPromptsSchema, headers={"ETag": "ETAG"})
    @blp.returns(304, description="Not Modified: If-None-Match has the current ETag")
    @blp.errors(404)
    def get(self, query: dict[str, Any], environment: str) -> Response:
        """Read every prompt in an environment

        Each prompt's version in the environment, by prompt name, as a read of
        /prompts/{name}/environments/{environment} answers it (with the rollout field
        while one runs), a page at a time (limit 1-1000, default 500). event_id is the
        org's newest event when the page was read: a watcher that resumes after it
        misses no change. Prompts without a version there are left out; a page may be
        shorter than limit and still have a next_cursor.
        """
        org, store = current_principal().org, storage()
        page = store.read_environment_page(org, environment, query["limit"], query["cursor"])
        # Each item is the body its single read answers (memoized there), spliced in.
        items = b",".join(read_body(store, org, item, environment)[0] for item in page.items)
        head = json_body({"environment": page.environment, "event_id": page.event_id})
        tail = json_body(page.next_cursor)
        body = head[:-1] + b',"items":[' + items + b'],"next_cursor":' + tail + b"}"
        status, headers, answer = etag_answer(
            request.headers.get("If-None-Match"), body, etag_of(body)
        )
        return Response(answer or None, status, headers)
