"""Reviews: the two-person rule before a version enters a protected environment.

Requested with Service Write by a key or a person; approved or rejected only by a
person (a user's token) who is neither the requester nor the version's author; the
last approval applies the promotion in the same atomic step (storage/lifecycle.py).
"""

from __future__ import annotations

from typing import Any

from flask import Response

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc import actions
from promptsvc.actions.usage import guard_from
from promptsvc.api.common import ApiBlueprint, View, names, storage
from promptsvc.api.responses import ReviewPageSchema, ReviewSchema
from promptsvc.api.versions import NAME_PARAM
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import (
    DecisionSchema,
    NoBodySchema,
    PageQuerySchema,
    ReviewCreateSchema,
    ReviewQuerySchema,
)
from promptsvc.names import Names
from storage import Page, Review

blp = ApiBlueprint(
    "reviews",
    __name__,
    url_prefix="/api/v1",
    description="Reviews: request, approve, reject or cancel a promotion into a "
    "protected environment.",
)

REVIEW_PARAM = {
    "in": "path",
    "name": "review_id",
    "required": True,
    "schema": {"type": "string"},
    "description": "Review id (rv_...)",
}


# The user ids a Review's answer names beside (promptsvc.names), as history does.
REVIEW_PEOPLE = ("requested_by", "rejected_by")


def _named(review: Review, who: Names | None = None) -> dict[str, Any]:
    return (who or names()).beside(review.to_json(), *REVIEW_PEOPLE)


def _page(page: Page[Review]) -> Response:
    who = names()
    return json_response(
        {"items": [_named(r, who) for r in page.items], "next_cursor": page.next_cursor}
    )


@blp.route("/reviews")
class Reviews(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(ReviewQuerySchema, location="query")
    @blp.returns(200, ReviewPageSchema)
    def get(self, query: dict[str, Any]) -> Response:
        """List the org's reviews

        Newest request first, optionally of one status and environment; paginated with
        limit and cursor.
        """
        page = storage().list_reviews(
            current_principal().org,
            status=query["status"],
            environment=query["environment"],
            limit=query["limit"],
            cursor=query["cursor"],
        )
        return _page(page)


@blp.route("/prompts/<name>/reviews", parameters=[NAME_PARAM])
class PromptReviews(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(PageQuerySchema, location="query")
    @blp.returns(200, ReviewPageSchema)
    @blp.errors(404)
    def get(self, query: dict[str, Any], name: str) -> Response:
        """List a prompt's reviews

        Newest request first; paginated with limit and cursor.
        """
        page = storage().list_reviews(
            current_principal().org, prompt_ref=name, limit=query["limit"], cursor=query["cursor"]
        )
        return _page(page)

    @blp.requires(SERVICE_WRITE)
    @blp.arguments(ReviewCreateSchema)
    @blp.returns(201, ReviewSchema)
    @blp.errors(404, 409, 413, 415)
    def post(self, body: dict[str, Any], name: str) -> Response:
        """Request a review

        Opens a review of placing version (a number or a v_ id) in environment, with
        expected_version = what the environment holds now and the environment's
        required_approvals (at least 1). 404 for an unknown prompt, version or
        environment; 409 when an open review of the same version and environment
        exists (with its review_id), or the version cannot enter the environment.
        The review shows the promotion check against what the environment holds now
        (breaking); a breaking request is 409 breaking_change unless allow_breaking
        (with notes), which lets the review apply whatever the check finds then.
        rollout_guard (with rollout_percent) is the guard of the rollout its approval
        starts (docs/usage.md).
        """
        review = actions.request_review(
            storage(),
            current_principal(),
            name,
            str(body["version"]),
            body["environment"],
            notes=body["notes"],
            rollout_percent=body["rollout_percent"],
            allow_breaking=body["allow_breaking"],
            rollout_guard=guard_from(body["rollout_guard"]),
        )
        return json_response(_named(review), 201)


@blp.route("/reviews/<review_id>", parameters=[REVIEW_PARAM])
class ReviewItem(View):
    @blp.requires(SERVICE_READ)
    @blp.returns(200, ReviewSchema)
    @blp.errors(404)
    def get(self, review_id: str) -> Response:
        """Get a review"""
        return json_response(_named(storage().get_review(current_principal().org, review_id)))


@blp.route("/reviews/<review_id>/approve", parameters=[REVIEW_PARAM])
class Approve(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(DecisionSchema, required=False)
    @blp.returns(200, ReviewSchema)
    @blp.errors(403, 404, 409, 413, 415)
    def post(self, body: dict[str, Any], review_id: str) -> Response:
        """Approve a review

        A person only (an API key's token: 403), never the requester nor the version's
        author (403, the message says why), once each (409). The approval that reaches
        required_approvals applies the promotion in the same atomic step, guarded by
        the review's expected_version: when the environment moved since the request,
        the review becomes stale and the answer is 409 with current_version. The same
        step runs the promotion check again: a breaking promotion of a review without
        allow_breaking is 409 breaking_change, and nothing is recorded (the review stays
        open: cancel it, or fix the version).
        """
        review, _ = actions.approve_review(
            storage(), current_principal(), review_id, comment=body["comment"]
        )
        return json_response(_named(review))


@blp.route("/reviews/<review_id>/reject", parameters=[REVIEW_PARAM])
class Reject(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(DecisionSchema, required=False)
    @blp.returns(200, ReviewSchema)
    @blp.errors(403, 404, 409, 413, 415)
    def post(self, body: dict[str, Any], review_id: str) -> Response:
        """Reject a review

        By a person who could approve it; closes it (409 when it is not open).
        """
        review = actions.reject_review(
            storage(), current_principal(), review_id, comment=body["comment"]
        )
        return json_response(_named(review))


@blp.route("/reviews/<review_id>/cancel", parameters=[REVIEW_PARAM])
class Cancel(View):
    @blp.requires(SERVICE_WRITE)
    @blp.arguments(NoBodySchema, required=False)
    @blp.returns(200, ReviewSchema)
    @blp.errors(403, 404, 409, 413, 415)
    def post(self, _body: dict[str, Any], review_id: str) -> Response:
        """Cancel a review

        By its requester or a Service Admin; closes it (409 when it is not open).
        """
        review = actions.cancel_review(storage(), current_principal(), review_id)
        return json_response(_named(review))
