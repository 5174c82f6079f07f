"""Gradual rollouts (docs/api.md section 18): a rollout is started by a promotion (or a
review) with ``rollout_percent`` (promptsvc.api.versions, promptsvc.api.reviews); here it
is read, stepped, completed and aborted. The environment reads that carry it are in
promptsvc.api.versions (answered by promptsvc.api.reads).
"""

from __future__ import annotations

from typing import Any

from flask import Response

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc import actions
from promptsvc.actions.usage import guard_from, guarded_view
from promptsvc.api.common import ApiBlueprint, View, names, storage
from promptsvc.api.responses import (
    GuardedRolloutSchema,
    PromotionResultSchema,
    RolloutListSchema,
    RolloutSchema,
)
from promptsvc.api.versions import ENVIRONMENT_PARAM, NAME_PARAM, named_rollout
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import RolloutAbortSchema, RolloutCompleteSchema, RolloutUpdateSchema
from storage import Rollout

blp = ApiBlueprint(
    "rollouts",
    __name__,
    url_prefix="/api/v1/prompts",
    description="Gradual rollouts: a candidate version served to a sticky share of an "
    "environment's callers, stepped, then completed or aborted.",
)


@blp.route("/<name>/rollouts", parameters=[NAME_PARAM])
class Rollouts(View):
    @blp.requires(SERVICE_READ)
    @blp.returns(200, RolloutListSchema)
    @blp.errors(404)
    def get(self, name: str) -> Response:
        """List a prompt's rollouts

        The rollouts running now, one per environment at most, by environment name.
        """
        found = storage().list_rollouts(current_principal().org, name)
        who = names()
        return json_response({"items": [named_rollout(rollout, who) for rollout in found]})


@blp.route("/<name>/rollouts/<environment>", parameters=[NAME_PARAM, ENVIRONMENT_PARAM])
class RolloutView(View):
    @blp.requires(SERVICE_READ)
    @blp.returns(200, GuardedRolloutSchema)
    @blp.errors(404)
    def get(self, name: str, environment: str) -> Response:
        """Get the rollout in an environment

        With its guard (null: none) and its arms: what the baseline and the candidate
        served and how it went, reported since it started (docs/usage.md). 404 when
        the prompt or the environment does not exist, or no rollout runs there.
        """
        rollout = storage().get_rollout(current_principal().org, name, environment)
        return json_response(guarded_rollout(rollout))

    @blp.requires(SERVICE_WRITE)
    @blp.arguments(RolloutUpdateSchema)
    @blp.returns(200, GuardedRolloutSchema)
    @blp.errors(404, 413, 415)
    def patch(self, body: dict[str, Any], name: str, environment: str) -> Response:
        """Step a rollout, or set its guard

        A new percent, 1-99 (100 is a completion: POST .../complete). Raising it only
        moves keys from the baseline to the candidate; lowering it moves them back. No
        review is needed, even in a protected environment. Writes rollout.updated.
        A guard (null: none) replaces the rollout's and is checked at once against the
        figures so far; it writes no event.
        """
        principal, rollout_id = current_principal(), body.get("rollout_id")
        if "guard" in body:
            rollout = actions.set_rollout_guard(
                storage(),
                principal,
                name,
                environment,
                guard_from(body["guard"]),
                rollout_id=rollout_id,
            )
            rollout_id = rollout.rollout_id
        if "percent" in body:
            rollout = actions.set_rollout_percent(
                storage(), principal, name, environment, body["percent"], rollout_id=rollout_id
            )
        return json_response(guarded_rollout(rollout))


def guarded_rollout(rollout: Rollout) -> dict[str, Any]:
    """A running rollout with its guard and arms."""
    return {**named_rollout(rollout), **guarded_view(storage(), current_principal().org, rollout)}


@blp.route("/<name>/rollouts/<environment>/complete", parameters=[NAME_PARAM, ENVIRONMENT_PARAM])
class Complete(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(RolloutCompleteSchema, required=False)
    @blp.returns(200, PromotionResultSchema)
    @blp.errors(404, 409, 413, 415)
    def post(self, body: dict[str, Any], name: str, environment: str) -> Response:
        """Complete a rollout

        In one atomic step the candidate becomes the environment's version, as a
        promotion makes it (in production: published, the baseline archived, or a draft
        with archive_previous_production false), with a history record carrying
        rollout_id, and the rollout ends. No review is needed. The promotion check runs
        again, candidate against baseline: a breaking completion answers 409
        breaking_change and changes nothing, unless allow_breaking is true (with notes:
        else 400); the record then says breaking. Writes version.promoted then
        rollout.completed. The body is optional.
        """
        promotion = actions.complete_rollout(
            storage(),
            current_principal(),
            name,
            environment,
            notes=body["notes"],
            archive_previous=body["archive_previous_production"],
            rollout_id=body.get("rollout_id"),
            allow_breaking=body["allow_breaking"],
        )
        return json_response(promotion.to_json())


@blp.route("/<name>/rollouts/<environment>/abort", parameters=[NAME_PARAM, ENVIRONMENT_PARAM])
class Abort(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(RolloutAbortSchema, required=False)
    @blp.returns(200, RolloutSchema)
    @blp.errors(404, 413, 415)
    def post(self, body: dict[str, Any], name: str, environment: str) -> Response:
        """Abort a rollout

        The rollout ends and every caller gets the environment's version (the
        baseline) again; the candidate keeps its status. Answers the rollout as it was
        when it ended. Writes rollout.aborted with reason manual. The body is optional.
        """
        rollout = actions.abort_rollout(
            storage(),
            current_principal(),
            name,
            environment,
            rollout_id=body.get("rollout_id"),
        )
        return json_response(named_rollout(rollout))
