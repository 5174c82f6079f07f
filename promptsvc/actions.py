"""Every change a person or a key can make, one function per action.

The API's views and the web console both call these, so a change made in either place
follows the same rules and leaves the same trace (``created_by``, ``promoted_by``,
promotion history, and the change's event with the request id). Each function takes the
verified :class:`Principal` whose org it acts in and whose user id it records, refuses
a principal whose role is too low (:class:`Forbidden`, whatever the caller checked
before), and takes input already validated by the request schemas
(promptsvc.inputs). Storage and identity errors pass through to the caller's
error mapping.

:func:`allowed` tells whether a principal may run an action, so a page offers only
what the server would accept.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar, cast

from identity.errors import InvalidKeyRequest
from identity.people import acting_person, is_person_client
from identity.principal import Principal
from identity.roles import SERVICE_ADMIN, SERVICE_WRITE, role_includes
from promptsvc.errors import Forbidden
from promptsvc.http import request_id
from promptsvc.templating.template import TemplateError, extract_variables
from storage import (
    PRODUCTION,
    UNGUARDED,
    ApiKey,
    Environment,
    Expected,
    InvalidInput,
    Promotion,
    Prompt,
    PromptVersion,
    Review,
    ReviewForbidden,
    Rollout,
    Storage,
    User,
    lifecycle,
)

if TYPE_CHECKING:
    from identity.core import Identity


class _Keep(enum.Enum):
    KEEP = "keep"


P = ParamSpec("P")
R = TypeVar("R")

ROLE_ATTRIBUTE = "required_role"


def requires(role: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The action needs ``role``: its second argument, the principal, must hold it."""

    def decorator(action: Callable[P, R]) -> Callable[P, R]:
        @wraps(action)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            principal = cast(Principal, args[1])
            if not role_includes(principal.role, role):
                raise Forbidden(role)
            return action(*args, **kwargs)

        setattr(checked, ROLE_ATTRIBUTE, role)
        return checked

    return decorator


def _trace(principal: Principal) -> dict[str, str]:
    """Who made a change and in which request: written into its event."""
    return {"actor": principal.user_id, "request_id": request_id()}


def allowed(principal: Principal, action: Callable[..., Any]) -> bool:
    """True when ``principal`` holds the role ``action`` needs."""
    role: str = getattr(action, ROLE_ATTRIBUTE)
    return role_includes(principal.role, role)


# --------------------------------------------------------------------------- prompts


@requires(SERVICE_WRITE)
def create_prompt(
    storage: Storage,
    principal: Principal,
    name: str,
    prompt_type: str = "text",
    description: str | None = None,
) -> Prompt:
    """A new prompt without versions. Raises PromptExists."""
    return storage.create_prompt(principal.org, name, prompt_type, description, **_trace(principal))


@requires(SERVICE_WRITE)
def delete_prompt(storage: Storage, principal: Principal, prompt_ref: str) -> None:
    """The prompt, all its versions and its history."""
    storage.delete_prompt(principal.org, prompt_ref, **_trace(principal))


# --------------------------------------------------------------------------- versions


def _variables(content: str, prompt_type: str) -> list[str]:
    """The content's variables; InvalidInput when it is not valid for the prompt's type
    (chat content that is not a message list)."""
    try:
        return extract_variables(content, prompt_type)
    except TemplateError as exc:
        raise InvalidInput(str(exc)) from None


@requires(SERVICE_WRITE)
def create_version(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    content: str,
    *,
    metadata: dict[str, object] | None = None,
    tags: list[str] | None = None,
    variables_schema: dict[str, Any] | None = None,
    examples: list[dict[str, Any]] | None = None,
) -> PromptVersion:
    """A new draft with the next number, created by the principal (the work of the
    person it counts as: a key's owner for a key). Its variables come
    from the content, checked for the prompt's type; its contract (``variables_schema``,
    ``examples``) is checked against them (ContractInvalid)."""
    prompt = storage.get_prompt(principal.org, prompt_ref)
    variables = _variables(content, prompt.prompt_type)
    # By id: a prompt deleted and made again under the name since has another type.
    return storage.create_version(
        principal.org,
        prompt.prompt_id,
        content,
        principal.user_id,
        metadata=metadata,
        tags=tags,
        variables=variables,
        variables_schema=variables_schema,
        examples=examples,
        request_id=request_id(),
        person=acting_person(storage, principal),
    )


# What an edit leaves as it is (None means "none": a schema or examples cleared).
KEEP: Final = _Keep.KEEP


@requires(SERVICE_WRITE)
def edit_version(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    version_ref: str,
    content: str | None = None,
    *,
    variables_schema: dict[str, Any] | _Keep | None = KEEP,
    examples: list[dict[str, Any]] | _Keep | None = KEEP,
) -> PromptVersion:
    """A draft's new content (None: it stays) and its variables, and its contract:
    ``variables_schema`` and ``examples`` given (None clears them) or KEEP. Whatever is
    kept must fit the new content (ContractInvalid). Raises LifecycleError for any other
    status."""
    current = storage.get_version(principal.org, prompt_ref, version_ref)
    # A version that is not a draft is refused for that, whatever the content.
    lifecycle.check_editable(current)
    text = current.content if content is None else content
    variables = _variables(text, current.prompt_type)
    return storage.edit_version(
        principal.org,
        current.prompt_id,
        current.version_id,
        text,
        variables=variables,
        variables_schema=current.variables_schema
        if isinstance(variables_schema, _Keep)
        else variables_schema,
        examples=list(current.examples) if isinstance(examples, _Keep) else examples,
        person=acting_person(storage, principal),
        **_trace(principal),
    )


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
def archive_version(
    storage: Storage, principal: Principal, prompt_ref: str, version_ref: str
) -> PromptVersion:
    """A draft becomes archived."""
    return storage.archive_version(principal.org, prompt_ref, version_ref, **_trace(principal))


@requires(SERVICE_WRITE)
def unarchive_version(
    storage: Storage, principal: Principal, prompt_ref: str, version_ref: str
) -> PromptVersion:
    """An archived version becomes a draft again."""
    return storage.unarchive_version(principal.org, prompt_ref, version_ref, **_trace(principal))


@requires(SERVICE_WRITE)
def delete_version(
    storage: Storage, principal: Principal, prompt_ref: str, version_ref: str
) -> None:
    """A draft or archived version; its number is never reused."""
    storage.delete_version(principal.org, prompt_ref, version_ref, **_trace(principal))


# --------------------------------------------------------------------------- rollouts


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
) -> Rollout:
    """A promotion with a percent: the version is served to ``percent`` of the
    environment's keyed callers, which keeps its version (storage/interface/rollouts.py).
    The promotion check against that version runs as for a promotion."""
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
        principal.org, prompt_ref, environment, percent, rollout_id=rollout_id, **_trace(principal)
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
        principal.org, prompt_ref, environment, rollout_id=rollout_id, **_trace(principal)
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
    storage.delete_environment(principal.org, name, **_trace(principal))


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
) -> Review:
    """Open a review of placing the version in ``environment`` (a key or a person; a
    key's request is its owner's, who cannot approve it). It
    shows the promotion check; a breaking one needs ``allow_breaking`` (and notes),
    which also lets it apply if the check still finds breaking changes then."""
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


@requires(SERVICE_ADMIN)
def create_key(
    identity: Identity,
    principal: Principal,
    role: str,
    description: str | None = None,
    *,
    owner: str | None = None,
) -> tuple[ApiKey, str]:
    """A new API key of the principal's org, with its secret (shown once), owned by the
    user named ``owner`` or else by the person the principal counts as."""
    if owner is None:
        owner_id = acting_person(identity.storage, principal)
    else:
        user = identity.storage.get_user(principal.org, owner)
        if user is None:
            raise InvalidKeyRequest(f"owner: there is no user {owner!r} in this org")
        owner_id = user.user_id
    return identity.create_key(principal.org, role, description, owner=owner_id)


@requires(SERVICE_ADMIN)
def revoke_key(identity: Identity, principal: Principal, client_id: str) -> ApiKey:
    """New token requests with the key fail at once."""
    return identity.revoke_key(principal.org, client_id)


@requires(SERVICE_ADMIN)
def list_keys(identity: Identity, principal: Principal) -> list[ApiKey]:
    """Every key of the principal's org, oldest first."""
    return identity.list_keys(principal.org)


@requires(SERVICE_ADMIN)
def create_user(
    identity: Identity,
    principal: Principal,
    username: str,
    role: str,
    password: str | None = None,
) -> tuple[User, str | None]:
    """A new user of the principal's org, with its generated password when none was
    given (shown once)."""
    return identity.create_user(principal.org, username, role, password)


@requires(SERVICE_ADMIN)
def update_user(
    identity: Identity,
    principal: Principal,
    username: str,
    *,
    role: str | None = None,
    disabled: bool | None = None,
    password: str | None = None,
) -> User:
    """Change a user's role, disabled flag or password; what is None stays."""
    return identity.update_user(
        principal.org, username, role=role, disabled=disabled, password=password
    )


@requires(SERVICE_ADMIN)
def list_users(identity: Identity, principal: Principal) -> list[User]:
    """Every user of the principal's org, oldest first."""
    return identity.list_users(principal.org)
