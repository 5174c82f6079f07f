"""Prompt versions: the read API and version management.

``{name}`` is a prompt name or its ``pmt_`` id; ``{versionId}`` a ``v_`` id or a version
number. The read endpoints never answer 400: a name or id that cannot exist is a 404.
They are answered by promptsvc.api.reads (before Flask's dispatch); what each one reads
is defined and documented here.
"""

from __future__ import annotations

import functools
from typing import Any

from flask import Response

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc import actions, includes
from promptsvc.actions.usage import guard_from
from promptsvc.api.common import ApiBlueprint, View, names, storage
from promptsvc.api.reads import Read, ReadFunction, ReadView
from promptsvc.api.responses import (
    PromotionResultSchema,
    PromptVersionInRolloutSchema,
    PromptVersionSchema,
    RolloutSchema,
    VersionPageSchema,
)
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import (
    NoBodySchema,
    PromoteSchema,
    VersionCreateSchema,
    VersionEditSchema,
    VersionQuerySchema,
)
from promptsvc.names import Names
from promptsvc.releasing import Release, release_kind
from storage import (
    PRODUCTION,
    UNGUARDED,
    Expected,
    Rollout,
    Storage,
)

blp = ApiBlueprint(
    "versions",
    __name__,
    url_prefix="/api/v1/prompts",
    description="Read prompt versions (production, latest, by id) and manage their lifecycle.",
)

NAME_PARAM = {
    "in": "path",
    "name": "name",
    "required": True,
    "schema": {"type": "string"},
    "description": "Prompt name, or its pmt_ id",
}
VERSION_PARAM = {
    "in": "path",
    "name": "versionId",
    "required": True,
    "schema": {"type": "string"},
    "description": "Version id (v_...), or the version number",
}


def expected(body: dict[str, Any]) -> Expected:
    """The guard of a promote or rollback body (its schema allows one of the two)."""
    if "expected_version" in body:
        value: Expected = body["expected_version"]
        return value
    return body.get("expected_production_version", UNGUARDED)


def read_endpoint(read: ReadFunction, *, environment: bool = False) -> ReadView:
    """A read endpoint made from ``read``, documented: Service Read, 200 PromptVersion with
    an ETag, 304, 404. An ``environment`` read may answer a rollout's extra field and
    takes ``rollout_key``."""
    view = ReadView(read)
    schema: Any = PromptVersionSchema
    parameters: list[Any] = ["IF_NONE_MATCH"]
    if environment:
        schema = {"oneOf": [PromptVersionSchema, PromptVersionInRolloutSchema]}
        parameters.append(ROLLOUT_KEY_PARAM)
    view = blp.returns(200, schema, headers={"ETag": "ETAG"})(view)
    view = blp.returns(304, description="Not Modified: If-None-Match has the current ETag")(view)
    view = blp.errors(404)(view)
    view = blp.doc(parameters=parameters)(view)
    return blp.bearer_docs(SERVICE_READ)(view)


ROLLOUT_KEY_PARAM = {
    "in": "query",
    "name": "rollout_key",
    "required": False,
    "schema": {"type": "string"},
    "description": "A stable id of the caller (a user or tenant id, never a random value). "
    "While a rollout runs in the environment, the answer is the version this key is "
    "assigned to: the candidate when int.from_bytes(sha256(f'{rollout_id}:{key}')"
    ".digest()[:8], 'big') % 10000 < percent * 100, else the environment's own. Ignored "
    "when empty or when no rollout runs",
}

ROLLOUT_READ = """

While a rollout runs in the environment, the answer also has `rollout: {rollout_id,
percent, candidate}` (candidate: the PromptVersion rolled out); with `rollout_key` it is
the version that key is assigned to (the baseline or the candidate), with the same
`rollout` field. The ETag changes with the rollout (its percent included)."""


def _environment_read(read: ReadFunction) -> ReadFunction:
    read.__doc__ = (read.__doc__ or "").rstrip() + ROLLOUT_READ
    return read


# The user ids a Rollout's answer names beside (promptsvc.names), as history does.
ROLLOUT_PEOPLE = ("started_by",)


def named_rollout(rollout: Rollout, who: Names | None = None) -> dict[str, Any]:
    return (who or names()).beside(rollout.to_json(), *ROLLOUT_PEOPLE)


@blp.route("/<name>/production", parameters=[NAME_PARAM], methods=["GET"])
@functools.partial(read_endpoint, environment=True)
@_environment_read
def production(storage: Storage, org: str, name: str) -> Read:
    """Get the production version

    The published version of the prompt (status published, is_production true).
    404 when the prompt does not exist or has no production version.
    """
    return storage.read_environment_including(org, name, PRODUCTION)


ENVIRONMENT_PARAM = {
    "in": "path",
    "name": "environment",
    "required": True,
    "schema": {"type": "string"},
    "description": "Environment name (production, or one of the org's)",
}


@blp.route(
    "/<name>/environments/<environment>",
    parameters=[NAME_PARAM, ENVIRONMENT_PARAM],
    methods=["GET"],
)
@functools.partial(read_endpoint, environment=True)
@_environment_read
def in_environment(storage: Storage, org: str, name: str, environment: str) -> Read:
    """Get the version in an environment

    The version the environment holds for the prompt (production: the published one).
    404 when the prompt or the environment does not exist, or the environment holds no
    version of the prompt.
    """
    return storage.read_environment_including(org, name, environment)


@blp.route("/<name>/latest", parameters=[NAME_PARAM], methods=["GET"])
@read_endpoint
def latest(storage: Storage, org: str, name: str) -> Read:
    """Get the latest version

    The version with the highest number, whatever its status.
    """
    return storage.read_version_including(org, name, None)


@blp.route("/<name>/versions/<versionId>", parameters=[NAME_PARAM, VERSION_PARAM], methods=["GET"])
@read_endpoint
def version(storage: Storage, org: str, name: str, versionId: str) -> Read:
    """Get a specific version"""
    return storage.read_version_including(org, name, versionId)


@blp.route("/<name>/versions", parameters=[NAME_PARAM])
class Versions(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(VersionQuerySchema, location="query")
    @blp.returns(200, VersionPageSchema)
    @blp.errors(404)
    def get(self, query: dict[str, Any], name: str) -> Response:
        """List versions, newest first

        Optionally only one status; paginated with limit and cursor.
        """
        page = storage().list_versions(
            current_principal().org, name, query["status"], query["limit"], query["cursor"]
        )
        # Includes resolve against production; one lookup reads each include once.
        lookup = includes.StoredLookup(storage(), current_principal().org)
        items = [includes.resolved_json(v, lookup) for v in page.items]
        return json_response({"items": items, "next_cursor": page.next_cursor})

    @blp.requires(SERVICE_WRITE)
    @blp.arguments(VersionCreateSchema)
    @blp.returns(201, PromptVersionSchema)
    @blp.errors(404, 413, 415)
    def post(self, body: dict[str, Any], name: str) -> Response:
        """Create a version

        A new draft with the next version number. Variables are extracted from the
        content; a chat prompt's content must be a JSON list of {role, content} messages.
        With variables_schema (its keys exactly the variables) and examples (at most 20,
        each valid under it), the version carries a variable contract; a problem is 400
        naming the variable or the example (errors maps variables_schema.<variable>
        and examples[<i>] to what is wrong). With config, the version carries its model
        configuration, kept as given; a problem is 400 naming its path (errors maps
        config.params.temperature to what is wrong).
        """
        version = actions.create_version(
            storage(),
            current_principal(),
            name,
            body["content"],
            metadata=body["metadata"],
            tags=body["tags"],
            variables_schema=body["variables_schema"],
            examples=body["examples"],
            config=body["config"],
        )
        return json_response(version.to_json(), 201)


@blp.route("/<name>/versions/<versionId>", parameters=[NAME_PARAM, VERSION_PARAM])
class Version(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(VersionEditSchema)
    @blp.returns(200, PromptVersionSchema)
    @blp.errors(404, 409, 413, 415)
    def patch(self, body: dict[str, Any], name: str, versionId: str) -> Response:
        """Edit a draft's content or contract

        Only a draft can be edited (else 409); its variables are re-extracted. What the
        body leaves out stays (content, variables_schema, examples, config; null clears
        the last three), and must still fit: a kept variables_schema whose keys are not
        the new content's variables is 400. A frozen draft (placed once, or named by an
        open review) is 409 conflict with reason frozen, config included.
        """
        version = actions.edit_version(
            storage(),
            current_principal(),
            name,
            versionId,
            body.get("content"),
            variables_schema=body.get("variables_schema", actions.KEEP),
            examples=body.get("examples", actions.KEEP),
            config=body.get("config", actions.KEEP),
        )
        return json_response(version.to_json())

    @blp.requires(SERVICE_WRITE)
    @blp.returns(204)
    @blp.errors(404, 409)
    def delete(self, name: str, versionId: str) -> Response:
        """Delete a version

        A draft or archived version; a published one gives 409. Numbers are never reused.
        """
        actions.delete_version(storage(), current_principal(), name, versionId)
        return Response(status=204)


@blp.route("/<name>/versions/<versionId>/promote", parameters=[NAME_PARAM, VERSION_PARAM])
class Promote(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(PromoteSchema, required=False)
    @blp.returns(200, PromotionResultSchema)
    @blp.alt_response(
        201, schema=RolloutSchema, description="With rollout_percent: the rollout started"
    )
    @blp.errors(404, 409, 413, 415)
    def post(self, body: dict[str, Any], name: str, versionId: str) -> Response:
        """Promote a version to production or another environment

        In one atomic step: in production (the default), the draft becomes published,
        the previous production version becomes archived (or draft with
        archive_previous_production false), and a promotion record is written; only a
        draft can be promoted (else 409). In another environment the version (any but
        an archived one) is placed there, its status unchanged. The body is optional.

        With expected_version (a number, or null for "none"; expected_production_version
        is its alias for production), the promotion happens only if the environment
        holds that version at that moment; otherwise nothing changes and the answer is
        409 with current_version. A protected environment (required_approvals >= 1)
        answers 409 review_required and changes nothing: request a review instead.
        404 for an unknown environment.

        The same step runs the promotion check against the version the environment
        holds (variables newly required, types changed, enums narrowed, its examples
        failing with the candidate): a breaking promotion answers 409 breaking_change
        with changes and changes nothing, unless allow_breaking is true (with notes:
        else 400); the history record says breaking.

        With rollout_percent (1-99) it starts a gradual rollout instead (201 Rollout):
        the environment keeps its version (the baseline), which it must hold (else 409),
        and the version (which must be one it could take directly, and pass the
        promotion check against the baseline) is served to that percent of the callers
        that read with a rollout_key; nothing else changes until the rollout is
        completed (POST .../rollouts/{environment}/complete). 409 when a rollout runs
        there already, or for any promotion into an environment with a rollout
        (complete or abort it first; the body then has rollout_id).
        archive_previous_production is not used by a start: completion takes its own.
        rollout_guard (with rollout_percent) gives the rollout a guard (docs/usage.md).
        """
        # Never a review here: the engine answers a protected environment 409
        # review_required (a review is POST .../reviews).
        kind = release_kind(protected=False, rollout=body["rollout_percent"] is not None)
        if kind is Release.ROLLOUT:
            rollout = actions.start_rollout(
                storage(),
                current_principal(),
                name,
                versionId,
                body["rollout_percent"],
                expected_production=expected(body),
                environment=body["environment"],
                allow_breaking=body["allow_breaking"],
                notes=body["notes"],
                guard=guard_from(body["rollout_guard"]),
            )
            return json_response(named_rollout(rollout), 201)
        promotion = actions.promote(
            storage(),
            current_principal(),
            name,
            versionId,
            notes=body["notes"],
            archive_previous=body["archive_previous_production"],
            expected_production=expected(body),
            environment=body["environment"],
            allow_breaking=body["allow_breaking"],
        )
        return json_response(promotion.to_json())


@blp.route("/<name>/versions/<versionId>/archive", parameters=[NAME_PARAM, VERSION_PARAM])
class Archive(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(NoBodySchema, required=False)
    @blp.returns(200, PromptVersionSchema)
    @blp.errors(404, 409, 413, 415)
    def post(self, _body: dict[str, Any], name: str, versionId: str) -> Response:
        """Archive a draft

        Only a draft can be archived; a published version gives 409 (promote another
        version instead). No body needed; if sent, it is an empty JSON object.
        """
        version = actions.archive_version(storage(), current_principal(), name, versionId)
        return json_response(version.to_json())


@blp.route("/<name>/versions/<versionId>/unarchive", parameters=[NAME_PARAM, VERSION_PARAM])
class Unarchive(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(NoBodySchema, required=False)
    @blp.returns(200, PromptVersionSchema)
    @blp.errors(404, 409, 413, 415)
    def post(self, _body: dict[str, Any], name: str, versionId: str) -> Response:
        """Unarchive a version

        An archived version goes back to draft; any other status gives 409. No body needed; if
        sent, it is an empty JSON object.
        """
        version = actions.unarchive_version(storage(), current_principal(), name, versionId)
        return json_response(version.to_json())
