"""Reviews: the request, and the decisions of people (the two-person rule)."""

from __future__ import annotations

from dataclasses import replace

from storage import lifecycle
from storage.errors import AlreadyApproved, ReviewExists, ReviewNotFound, ReviewStale
from storage.ids import new_id
from storage.records import Approval, PromptVersion, Review
from storage.release.digest import content_digest
from storage.release.draft import Draft
from storage.release.entry import (
    begin_rollout,
    breaking_changes,
    check_baseline,
    check_contract,
    enter,
)
from storage.release.includes import affected_prompts
from storage.release.records import (
    Actor,
    ApproveReview,
    CancelReview,
    Change,
    RejectReview,
    Request,
    RequestReview,
    State,
)


def request_review(state: State, request: RequestReview) -> Change:
    """Open a review of placing the version in the environment (or of starting a
    rollout there), expecting what the environment holds now; it records the content
    digest, and the version stays frozen while the review is open."""
    lifecycle.check_acknowledgement(request.allow_breaking, request.notes)
    draft = Draft(state, request)
    number, environment = request.version, request.environment
    env = draft.environment(environment)
    version = draft.version(number)
    for review in draft.open_reviews():
        if (review.environment, review.version) == (environment, number):
            raise ReviewExists(review.review_id)
    current = draft.held(environment)
    lifecycle.check_enterable(environment, version, current)
    if request.rollout_percent is not None:
        lifecycle.check_percent(request.rollout_percent)
        check_baseline(draft, number, environment)
    changes = breaking_changes(draft, number, environment)
    lifecycle.check_breaking(draft.name, environment, changes, request.allow_breaking)
    review = Review(
        review_id=new_id("rv_"),
        prompt_id=state.prompt.prompt_id,
        prompt_name=state.prompt.name,
        version=number,
        version_id=version.version_id,
        environment=environment,
        status="open",
        requested_by=request.actor.identity or "",
        requested_at=request.now,
        notes=request.notes,
        expected_version=current,
        required_approvals=max(env.required_approvals, 1),
        approvals=(),
        rejected_by=None,
        decided_at=None,
        rollout_percent=request.rollout_percent,
        version_author=version.created_by,
        allow_breaking=request.allow_breaking,
        breaking=tuple(changes),
        content_digest=content_digest(version),
        requested_by_person=request.actor.person,
        affected_prompts=affected_prompts(draft, environment),
    )
    draft.change.new_reviews.append(review)
    if request.guard is not None and request.rollout_percent is not None:
        draft.change.guards[review.review_id] = request.guard
    draft.review_event("review.requested", review)
    draft.change.answer = review
    return draft.change


def approve_review(state: State, request: ApproveReview) -> Change:
    """A person's approval; the last one needed applies the review in the same change
    (a promotion or a rollout's start), while the environment holds what it held at
    the request and the version has the content that was reviewed; else the review is
    ``stale`` (written with the approval) and the approve fails."""
    draft = Draft(state, request)
    review = _review(draft, request.review_id)
    check_approver(review, request.actor, state.versions.get(review.version))
    approval = Approval(draft.actor or "", request.username, request.now, request.comment)
    review = replace(review, approvals=(*review.approvals, approval))
    if len(review.approvals) < review.required_approvals:
        return _decided(draft, review, "review.approved", (review, None))
    environment, number = review.environment, review.version
    draft.environment(environment)
    current = draft.held(environment)
    if current != review.expected_version:
        stale = _closed(review, "stale", request)
        change = _decided(draft, stale, "review.approved", None)
        change.refusal = ReviewStale(
            review.review_id, review.prompt_name, review.expected_version, current, environment
        )
        return change
    candidate = draft.version(number)
    if review.content_digest and content_digest(candidate) != review.content_digest:
        stale = _closed(review, "stale", request)
        change = _decided(draft, stale, "review.approved", None)
        refusal = ReviewStale(review.review_id, review.prompt_name, current, current, environment)
        refusal.args = (
            lifecycle.DIGEST_CHANGED.format(
                review_id=review.review_id, version=number, digest=review.content_digest
            ),
        )
        change.refusal = refusal
        return change
    lifecycle.check_enterable(environment, candidate, current)
    if review.rollout_percent is not None:
        check_baseline(draft, number, environment)
    lifecycle.check_no_rollout(draft.name, state.rollouts.get(environment), "review")
    breaking = check_contract(draft, number, environment, review.allow_breaking)
    applied = _closed(review, "applied", request)
    _decided(draft, applied, "review.approved", None)
    if review.rollout_percent is not None:
        rollout = begin_rollout(draft, number, environment, review.rollout_percent)
        draft.change.moved_guards[review.review_id] = rollout.rollout_id
        result: object = rollout
    else:
        result = enter(draft, number, environment, review.notes, review=applied, breaking=breaking)
    draft.review_event("review.applied", applied)
    draft.change.answer = (applied, result)
    return draft.change


def reject_review(state: State, request: RejectReview) -> Change:
    """Close an open review as ``rejected``: a decision of the people who may approve
    it, who may reject after approving."""
    draft = Draft(state, request)
    review = _review(draft, request.review_id)
    check_decider(review, request.actor, state.versions.get(review.version))
    rejected = _closed(
        review, "rejected", request, rejected_by=draft.actor, rejection_comment=request.comment
    )
    return _decided(draft, rejected, "review.rejected", rejected)


def cancel_review(state: State, request: CancelReview) -> Change:
    """Close an open review as ``cancelled``: by its requester (or the person the
    requester counts as), or a Service Admin."""
    draft = Draft(state, request)
    review = _review(draft, request.review_id)
    check_canceller(review, request.actor, request.admin)
    cancelled = _closed(review, "cancelled", request)
    return _decided(draft, cancelled, "review.cancelled", cancelled)


def cancel_for_environment(draft: Draft, environment: str) -> None:
    """Cancel the prompt's open reviews of ``environment`` (it is being deleted), in
    request order."""
    for review in draft.open_reviews():
        if review.environment == environment:
            cancelled = _closed(review, "cancelled", draft.request)
            draft.change.reviews.append(cancelled)
            draft.review_event("review.cancelled", cancelled)


# -- helpers


def _review(draft: Draft, review_id: str) -> Review:
    review = draft.state.reviews.get(review_id)
    if review is None:
        raise ReviewNotFound(review_id)
    return review


def _people(actor: Actor) -> set[str]:
    """The identity and the person an actor counts as."""
    return {who for who in (actor.identity, actor.person) if who}


def check_decider(review: Review, actor: Actor, version: PromptVersion | None) -> None:
    """Whether ``actor`` may decide (approve or reject) ``review`` of ``version`` (None:
    deleted): a current user with Service Write (by the stored ``record``, whatever the
    token says), on an open review, who is neither its requester nor one of its
    version's authors, nor the owner of a key that was. Raises the refusal."""
    record = actor.record
    if record is not None and record.disabled:
        raise lifecycle.review_refusal("disabled", review.review_id, review.version)
    if record is not None and record.role not in lifecycle.DECIDING_ROLES:
        raise lifecycle.review_refusal("role", review.review_id, review.version, record.role)
    lifecycle.check_open(review)
    people = _people(actor)
    if actor.identity == review.requested_by:
        raise lifecycle.review_refusal("requester", review.review_id, review.version)
    if review.requested_by_person in people:
        raise lifecycle.review_refusal("requester_key", review.review_id, review.version)
    if actor.identity == review.version_author:
        raise lifecycle.review_refusal("author", review.review_id, review.version)
    if version is not None and people & set(version.authors):
        raise lifecycle.review_refusal("author_key", review.review_id, review.version)


def check_approver(review: Review, actor: Actor, version: PromptVersion | None) -> None:
    """:func:`check_decider`, and once per person."""
    check_decider(review, actor, version)
    if any(approval.user_id == actor.identity for approval in review.approvals):
        raise AlreadyApproved(review.review_id)


def check_canceller(review: Review, actor: Actor, admin: bool) -> None:
    """An open review is cancelled by its requester (or the person the requester counts
    as), or a Service Admin (``admin``)."""
    lifecycle.check_open(review)
    requesters = {review.requested_by, review.requested_by_person} - {None}
    if not admin and not requesters & _people(actor):
        raise lifecycle.review_refusal("cancel", review.review_id, review.version)


def _closed(review: Review, status: str, request: Request, **changes: object) -> Review:
    """The review decided: ``status`` (applied, rejected, cancelled, stale) now."""
    return replace(review, status=status, decided_at=request.now, **changes)  # type: ignore[arg-type]


def _decided(draft: Draft, review: Review, kind: str, answer: object) -> Change:
    draft.change.reviews.append(review)
    draft.review_event(kind, review)
    draft.change.answer = answer  # type: ignore[assignment]
    return draft.change
