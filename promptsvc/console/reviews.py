"""Reviews: the inbox of the org's reviews (open ones first in mind), a review's page
with the diff against what its environment holds now, and approving, rejecting or
cancelling it.

Whether the signed-in person may decide a review is storage's rule
(storage.release's ``check_approver``, ``check_decider``, ``check_canceller``), asked
before the page is drawn so it offers only what the decision would accept and says why
not otherwise; the decision itself goes through promptsvc.actions like the API's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from identity.people import acting_person
from identity.roles import SERVICE_ADMIN, role_includes
from promptsvc import actions
from promptsvc.console.common import (
    FormInvalid,
    load,
    names,
    needs_role,
    principal,
    required_role,
    storage,
)
from promptsvc.console.comparison import comparison, holding
from promptsvc.console.errors import sentence
from promptsvc.inputs import DecisionSchema
from storage import (
    REVIEW_STATUSES,
    Conflict,
    NotFound,
    PromptVersion,
    Review,
    ReviewForbidden,
    ReviewStale,
    Rollout,
    StorageError,
    decode_number_cursor,
    release,
)
from storage.release import Actor, content_digest

bp = Blueprint("reviews", __name__)

REVIEWS_PER_PAGE = 25
# The header's count of open reviews reads at most this many (shown as "9+").
COUNT_LIMIT = 10


def open_count() -> str | None:
    """The number of the org's open reviews for the header ("9+" past nine), None when
    there is none or storage cannot say: a header must never fail a page."""
    try:
        page = storage().list_reviews(principal().org, status="open", limit=COUNT_LIMIT)
    except StorageError:
        return None
    if not page.items:
        return None
    if len(page.items) == COUNT_LIMIT or page.next_cursor is not None:
        return f"{COUNT_LIMIT - 1}+"
    return str(len(page.items))


@dataclass(frozen=True)
class Decisions:
    """What the signed-in person may do with a review, and why not when they may not
    (None when they may)."""

    approve: str | None
    reject: str | None
    cancel: str | None


def decisions(review: Review) -> Decisions:
    person, backend = principal(), storage()
    # The engine's own rules, asked with what an approval would read: the person's
    # stored record and the version (None when deleted).
    actor = Actor(
        person.user_id,
        acting_person(backend, person),
        backend.get_user_by_id(person.org, person.user_id),
    )
    try:
        version: PromptVersion | None = backend.get_version(
            person.org, review.prompt_id, review.version_id
        )
    except NotFound:
        version = None

    def refusal(check: Callable[[], None], action: Callable[..., Any], doing: str) -> str | None:
        if not actions.allowed(person, action):
            return needs_role(required_role(action), doing)
        try:
            check()
        except (ReviewForbidden, Conflict) as exc:
            return sentence(str(exc))
        return None

    admin = role_includes(person.role, SERVICE_ADMIN)
    return Decisions(
        approve=refusal(
            lambda: release.check_approver(review, actor, version),
            actions.approve_review,
            "Approving",
        ),
        reject=refusal(
            lambda: release.check_decider(review, actor, version),
            actions.reject_review,
            "Rejecting",
        ),
        cancel=refusal(
            lambda: release.check_canceller(review, actor, admin),
            actions.cancel_review,
            "Cancelling",
        ),
    )


@bp.get("/reviews")
def index() -> str:
    backend, org = storage(), principal().org
    status = request.args.get("status", "open")
    if status not in (*REVIEW_STATUSES, "all"):
        status = "open"
    cursor = request.args.get("cursor") or None
    if cursor is not None:
        decode_number_cursor(cursor)  # InvalidInput (a 400 page) for one we did not make
    page = backend.list_reviews(
        org, status=None if status == "all" else status, limit=REVIEWS_PER_PAGE, cursor=cursor
    )
    summaries = {r.review_id: _summary(r) for r in page.items if r.status == "open"}
    return render_template(
        "console/reviews.html",
        page=page,
        status=status,
        statuses=REVIEW_STATUSES,
        cursor=cursor,
        summaries=summaries,
        who=names(),
    )


def _summary(review: Review) -> dict[str, Any] | None:
    """An open review's change in a line: lines added and removed, and what the
    environment holds now (None when the version is gone)."""
    try:
        compared = _compared(review)
    except NotFound:
        return None
    rows = compared["rows"]
    return {
        "added": sum(1 for row in rows if row.kind in ("added", "changed")),
        "removed": sum(1 for row in rows if row.kind in ("removed", "changed")),
        "current": compared["old"],
    }


def _compared(review: Review) -> dict[str, Any]:
    """An open review's version compared with what its environment holds now; a closed
    one's with what it held at the request (what the review was about)."""
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, review.prompt_id)
    version = backend.get_version(org, prompt.prompt_id, review.version_id)
    if review.status == "open":
        before = holding(prompt, review.environment)
    elif review.expected_version is None:
        before = None
    else:
        before = backend.get_version(org, prompt.prompt_id, str(review.expected_version))
    # What the page shows is the version as stored now: its digest is what a person
    # who approves from the page saw.
    return {**comparison(prompt, before, version), "digest": content_digest(version)}


@bp.get("/reviews/<review_id>")
def show(review_id: str) -> Response:
    return _review_page(storage().get_review(principal().org, review_id))


def _review_page(
    review: Review,
    *,
    comment: str = "",
    errors: dict[str, list[str]] | None = None,
    conflict: str | None = None,
    status: int = 200,
) -> Response:
    compared = None
    gone = None
    try:
        compared = _compared(review)
    except NotFound as exc:
        gone = sentence(str(exc))
    html = render_template(
        "console/review.html",
        review=review,
        compared=compared,
        gone=gone,
        allowed=decisions(review),
        comment=comment,
        errors=errors or {},
        conflict=conflict,
        who=names(),
    )
    return Response(html, status=400 if errors else status, mimetype="text/html")


def unseen_change(review: Review, version_id: str, digest: str) -> str | None:
    """Why approving would apply something other than what the page showed (the
    version and content digest the form posts), or None when it would not."""
    backend = storage()
    version = backend.get_version(principal().org, review.prompt_id, review.version_id)
    now = content_digest(version)
    # A review requested before reviews recorded digests pins nothing but the version.
    requested = review.content_digest or now
    if version_id == review.version_id and digest == now == requested:
        return None
    return (
        f"v{review.version} of {review.prompt_name} is not what you read: the page you "
        f"approved from showed content digest {digest[:12] or 'none'}, the version has "
        f"{now[:12]} now and this review applies {requested[:12]}. Nothing was approved. "
        "Read the change below again before deciding."
    )


@bp.post("/reviews/<review_id>/approve")
def approve(review_id: str) -> WerkzeugResponse:
    backend = storage()
    review = backend.get_review(principal().org, review_id)
    comment = request.form.get("comment", "").strip()
    try:
        body = load(DecisionSchema(), {"comment": comment or None})
    except FormInvalid as invalid:
        return _review_page(review, comment=comment, errors=invalid.errors)
    # Who may not approve (or a review no longer open) hears why from the approval.
    if review.status == "open" and decisions(review).approve is None:
        unseen = unseen_change(
            review, request.form.get("version_id", ""), request.form.get("content_digest", "")
        )
        if unseen is not None:
            return _review_page(review, comment=comment, conflict=unseen, status=409)
    try:
        decided, applied = actions.approve_review(
            backend, principal(), review_id, comment=body["comment"]
        )
    except ReviewStale as stale:
        now = f"v{stale.current}" if stale.current is not None else "nothing"
        was = f"v{review.expected_version}" if review.expected_version is not None else "nothing"
        message = (
            f"{review.environment} changed since the request: it held {was} and holds {now}. "
            "Your approval is recorded and the review is now stale; nothing was promoted. "
            "Request a new review to place the version against what it holds now."
        )
        return _review_page(
            backend.get_review(principal().org, review_id), conflict=message, status=409
        )
    if isinstance(applied, Rollout):
        flash(
            f"Approved: {decided.prompt_name} v{decided.version} is rolling out to "
            f"{applied.percent}% of {decided.environment}.",
            "success",
        )
    elif applied is not None:
        flash(
            f"Approved: {decided.prompt_name} v{decided.version} is now in {decided.environment}.",
            "success",
        )
    else:
        flash(
            f"Approved ({len(decided.approvals)} of {decided.required_approvals}); "
            f"it needs {decided.required_approvals - len(decided.approvals)} more.",
            "success",
        )
    return redirect(url_for("console.reviews.show", review_id=review_id))


@bp.post("/reviews/<review_id>/reject")
def reject(review_id: str) -> WerkzeugResponse:
    backend = storage()
    review = backend.get_review(principal().org, review_id)
    comment = request.form.get("comment", "").strip()
    try:
        body = load(DecisionSchema(), {"comment": comment or None})
    except FormInvalid as invalid:
        return _review_page(review, comment=comment, errors=invalid.errors)
    actions.reject_review(backend, principal(), review_id, comment=body["comment"])
    flash(f"Rejected: {review.prompt_name} v{review.version} stays out of {review.environment}.")
    return redirect(url_for("console.reviews.show", review_id=review_id))


@bp.post("/reviews/<review_id>/cancel")
def cancel(review_id: str) -> WerkzeugResponse:
    review = actions.cancel_review(storage(), principal(), review_id)
    flash(f"Review cancelled: {review.prompt_name} v{review.version} was not placed.", "success")
    return redirect(url_for("console.reviews.show", review_id=review_id))
