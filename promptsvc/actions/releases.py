"""Releasing versions: promotions, rollbacks, rollouts, environments and reviews."""

from __future__ import annotations

from identity.people import acting_person, is_person_client
from identity.principal import Principal
from identity.roles import SERVICE_ADMIN, SERVICE_WRITE, role_includes
from promptsvc.actions.roles import requires, trace
from promptsvc.http import request_id
from storage import (
    PRODUCTION,
    UNGUARDED,
    Environment,
    Expected,
    Promotion,
    Review,
    ReviewForbidden,
    Rollout,
    Storage,
)
from storage.usage_records import Guard


@requires(SERVICE_WRITE)
def promote(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    version_ref: str,
    *,
    notes: str | None = None,
    archive_previous: bool = True,
    expected_production: Expected = UNGUARDED,
    environment: str = PRODUCTION,
    allow_breaking: bool = False,
) -> Promotion:
    """Make a draft production (or place a version in another ``environment``), in one
    atomic step with its history record. With ``expected_production`` (the version
    expected in that environment), raises ProductionChanged when it holds another
    version at that moment; ReviewRequired for a protected environment;
    BreakingPromotion when the promotion check finds breaking changes and
    ``allow_breaking`` (which needs notes) does not acknowledge them."""
    return storage.promote(
        principal.org,
        prompt_ref,
        version_ref,
        principal.user_id,
        notes=notes,
        archive_previous=archive_previous,
        expected_production=expected_production,
        request_id=request_id(),
        environment=environment,
        allow_breaking=allow_breaking,
    )


@requires(SERVICE_WRITE)
def rollback(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    *,
    notes: str | None = None,
    to_version: int | None = None,
    expected_production: Expected = UNGUARDED,
    environment: str = PRODUCTION,
) -> Promotion:
    """Make the previous production version (or ``to_version``) production again; in
    another ``environment``, its previous version. No review needed."""
    return storage.rollback(
        principal.org,
        prompt_ref,
        principal.user_id,
        notes=notes,
        to_version=to_version,
        expected_production=expected_production,
        request_id=request_id(),
        environment=environment,
    )


@requires(SERVICE_WRITE)
def start_rollout(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    version_ref: str,
    percent: int,
    *,
    expected_production: Expected = UNGUARDED,
    environment: str = PRODUCTION,
    allow_breaking: bool = False,
    notes: str | None = None,
    guard: Guard | None = None,
) -> Rollout:
    """A promotion with a percent: the version is served to ``percent`` of the
    environment's keyed callers, which keeps its version (storage/interface/rollouts.py).
    The promotion check against that version runs as for a promotion. ``guard``: the
    rollout's guard (docs/usage.md), kept in the same step as the start."""
    return storage.start_rollout(
        principal.org,
        prompt_ref,
        version_ref,
        environment,
        percent,
        principal.user_id,
        expected_production,
        request_id=request_id(),
        allow_breaking=allow_breaking,
        notes=notes,
        guard=guard,
    )


@requires(SERVICE_WRITE)
def set_rollout_percent(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    environment: str,
    percent: int,
    *,
    rollout_id: str | None = None,
) -> Rollout:
    """Step a rollout up or down (no review needed)."""
    return storage.set_rollout_percent(
        principal.org, prompt_ref, environment, percent, rollout_id=rollout_id, **trace(principal)
    )


@requires(SERVICE_WRITE)
def complete_rollout(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    environment: str,
    *,
    notes: str | None = None,
    archive_previous: bool = True,
    rollout_id: str | None = None,
    allow_breaking: bool = False,
) -> Promotion:
    """The candidate becomes the environment's version, as a promotion (no review; the
    promotion check runs again)."""
    return storage.complete_rollout(
        principal.org,
        prompt_ref,
        environment,
        principal.user_id,
        notes,
        archive_previous,
        rollout_id=rollout_id,
        request_id=request_id(),
        allow_breaking=allow_breaking,
    )


@requires(SERVICE_WRITE)
def abort_rollout(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    environment: str,
    *,
    rollout_id: str | None = None,
) -> Rollout:
    """End a rollout; the environment keeps its version."""
    return storage.abort_rollout(
        principal.org,
        prompt_ref,
        environment,
        rollout_id=rollout_id,
        actor=principal.user_id,
        request_id=request_id(),
    )


# --------------------------------------------------------------------------- environments


@requires(SERVICE_ADMIN)
def create_environment(
    storage: Storage,
    principal: Principal,
    name: str,
    required_approvals: int = 0,
    description: str | None = None,
) -> Environment:
    """A new environment of the principal's org (the caller validated the name)."""
    return storage.create_environment(principal.org, name, required_approvals, description)


@requires(SERVICE_ADMIN)
def update_environment(
    storage: Storage,
    principal: Principal,
    name: str,
    *,
    required_approvals: int | None = None,
    description: str | None = None,
) -> Environment:
    """Change what is not None (``description=""`` clears it), production included."""
    return storage.update_environment(
        principal.org, name, required_approvals=required_approvals, description=description
    )


@requires(SERVICE_ADMIN)
def delete_environment(storage: Storage, principal: Principal, name: str) -> None:
    """An environment other than production, with its placements; its open reviews
    are cancelled and its rollouts aborted (their events name the principal)."""
    storage.delete_environment(principal.org, name, **trace(principal))


# --------------------------------------------------------------------------- reviews


@requires(SERVICE_WRITE)
def request_review(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    version_ref: str,
    environment: str,
    *,
    notes: str | None = None,
    rollout_percent: int | None = None,
    allow_breaking: bool = False,
    rollout_guard: Guard | None = None,
) -> Review:
    """Open a review of placing the version in ``environment`` (a key or a person; a
    key's request is its owner's, who cannot approve it). It
    shows the promotion check; a breaking one needs ``allow_breaking`` (and notes),
    which also lets it apply if the check still finds breaking changes then.
    ``rollout_guard`` (with ``rollout_percent``): the guard of the rollout its approval
    starts, kept by the review's id until then."""
    return storage.request_review(
        principal.org,
        prompt_ref,
        version_ref,
        environment,
        principal.user_id,
        notes,
        rollout_percent,
        request_id=request_id(),
        allow_breaking=allow_breaking,
        person=acting_person(storage, principal),
        guard=rollout_guard,
    )


def _person(principal: Principal, action: str) -> None:
    """Reviews are decided by people: a key's token cannot approve or reject."""
    if not is_person_client(principal.client_id):
        raise ReviewForbidden(
            f"only a person can {action} a review: sign in (promptsvc login, the console) "
            "instead of using an API key"
        )


@requires(SERVICE_WRITE)
def approve_review(
    storage: Storage, principal: Principal, review_id: str, *, comment: str | None = None
) -> tuple[Review, Promotion | Rollout | None]:
    """A person's approval; the last one needed applies the review (its promotion, or
    the rollout a review with a percent starts; ReviewStale when the environment moved
    since the request)."""
    _person(principal, "approve")
    user = storage.get_user_by_id(principal.org, principal.user_id)
    username = user.username if user is not None else principal.user_id
    return storage.approve_review(
        principal.org, review_id, principal.user_id, username, comment, request_id=request_id()
    )


@requires(SERVICE_WRITE)
def reject_review(
    storage: Storage, principal: Principal, review_id: str, *, comment: str | None = None
) -> Review:
    """A person who may approve closes the review as rejected."""
    _person(principal, "reject")
    return storage.reject_review(
        principal.org, review_id, principal.user_id, comment, request_id=request_id()
    )


@requires(SERVICE_WRITE)
def cancel_review(storage: Storage, principal: Principal, review_id: str) -> Review:
    """The requester (or a Service Admin) withdraws an open review."""
    return storage.cancel_review(
        principal.org,
        review_id,
        principal.user_id,
        role_includes(principal.role, SERVICE_ADMIN),
        request_id=request_id(),
    )


# --------------------------------------------------------------------------- keys and users
