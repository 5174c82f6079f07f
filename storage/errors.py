"""Every error a storage backend raises: one root, mapped to HTTP in one place by the API
(promptsvc/api/errors.py)::

    StorageError
    ├── NotFound                  -> 404
    │   ├── PromptNotFound
    │   ├── VersionNotFound
    │   ├── NoProductionVersion
    │   ├── ApiKeyNotFound
    │   ├── UserNotFound
    │   ├── SessionNotFound       (a refresh family for a session that has ended)
    │   ├── WebhookNotFound
    │   ├── EnvironmentNotFound
    │   ├── NothingInEnvironment  (a prompt without a version in an environment)
    │   ├── ReviewNotFound
    │   └── RolloutNotFound
    ├── Conflict                  -> 409, with ``reason`` (docs/api.md section 9) and extras()
    │   ├── PromptExists
    │   ├── ApiKeyExists
    │   ├── UserExists
    │   ├── DeviceCodeExists      (a device or user code already in use)
    │   ├── DeviceAlreadyDecided  (approve/deny of a device authorization not pending)
    │   ├── RefreshTokenReused    (a used refresh token again: its family is revoked)
    │   ├── OrgNotEmpty           (a restore into an org that has data)
    │   ├── LifecycleError        (a transition the rules forbid)
    │   │   ├── NoRollbackTarget
    │   │   └── VersionFrozen     (changing a version that was placed or reviewed)
    │   ├── ProductionChanged     (a guarded promotion or rollback whose expected
    │   │                          version is not the environment's current one)
    │   │   └── ReviewStale       (the last approval found the environment moved)
    │   ├── EnvironmentExists
    │   ├── ReviewRequired        (a direct promotion into a protected environment)
    │   ├── ReviewExists          (an open review of the same version and environment)
    │   ├── ReviewClosed          (a decision on a review that is not open)
    │   ├── AlreadyApproved
    │   ├── RolloutInProgress     (a second rollout, or a change a rollout blocks)
    │   ├── BreakingPromotion     (a promotion that breaks the variable contract,
    │   │                          not acknowledged with allow_breaking)
    │   ├── IncludeRefused        (includes that cannot stand where a version goes)
    │   └── InUse                 (deleting or taking away what others include)
    ├── ReviewForbidden           -> 403 (the requester, an author or their key's owner,
    │                              or a disabled or demoted user, deciding)
    ├── InvalidInput              -> 400 (bad cursor, chat content that is not a message list)
    │   └── ContractInvalid       (a variables_schema or examples against the rules)
    │       └── ConfigInvalid     (a model config against the rules)
    └── StorageUnavailable        -> 503 (the backend does not answer)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from storage.records import BreakingChange


class StorageError(Exception):
    """Root of every error raised by a storage backend."""


class NotFound(StorageError):
    pass


class PromptNotFound(NotFound):
    def __init__(self, prompt_ref: str) -> None:
        super().__init__(f"prompt '{prompt_ref}' not found")
        self.prompt_ref = prompt_ref


class VersionNotFound(NotFound):
    def __init__(self, prompt_ref: str, version_ref: str) -> None:
        super().__init__(f"version '{version_ref}' of prompt '{prompt_ref}' not found")
        self.prompt_ref = prompt_ref
        self.version_ref = version_ref


class NoProductionVersion(NotFound):
    def __init__(self, prompt_ref: str) -> None:
        super().__init__(f"prompt '{prompt_ref}' has no production version")
        self.prompt_ref = prompt_ref


class ApiKeyNotFound(NotFound):
    def __init__(self, client_id: str) -> None:
        super().__init__(f"API key '{client_id}' not found")
        self.client_id = client_id


class WebhookNotFound(NotFound):
    def __init__(self, webhook_id: str) -> None:
        super().__init__(f"webhook '{webhook_id}' not found")
        self.webhook_id = webhook_id


class Conflict(StorageError):
    """A change refused because of what is stored. ``reason`` is one word a client
    branches on (the table of docs/api.md section 9); :meth:`extras` the fields the
    answer adds for it."""

    reason: str = "conflict"

    def extras(self) -> dict[str, Any]:
        return {}


class TooManyWebhooks(Conflict):
    """The org has as many webhooks as it may (storage.interface.MAX_WEBHOOKS)."""

    reason = "limit"

    def __init__(self, limit: int) -> None:
        super().__init__(f"an org has at most {limit} webhooks; delete one before adding another")
        self.limit = limit


class PromptExists(Conflict):
    reason = "exists"

    def __init__(self, name: str) -> None:
        super().__init__(f"prompt '{name}' already exists")
        self.name = name


class ApiKeyExists(Conflict):
    reason = "exists"

    def __init__(self, client_id: str) -> None:
        super().__init__(f"API key '{client_id}' already exists")
        self.client_id = client_id


class UserNotFound(NotFound):
    def __init__(self, username: str) -> None:
        super().__init__(f"user '{username}' not found")
        self.username = username


class UserExists(Conflict):
    reason = "exists"

    def __init__(self, username: str) -> None:
        super().__init__(f"user '{username}' already exists")
        self.username = username


class SessionNotFound(NotFound):
    """The realm session is gone (ended or expired)."""


class DeviceCodeExists(Conflict):
    """The device code or the user code is in use already: make new ones."""

    reason = "exists"


class DeviceAlreadyDecided(Conflict):
    """The device authorization was approved or denied already."""


class RefreshTokenReused(Conflict):
    """A refresh token was presented after it had been rotated; its whole family is
    revoked by the same atomic step that found out."""

    def __init__(self, family_id: str) -> None:
        super().__init__("refresh token reused: its family is revoked")
        self.family_id = family_id


class OrgNotEmpty(Conflict):
    reason = "exists"

    def __init__(self, org: str) -> None:
        super().__init__(
            f"org '{org}' is not empty (it has prompts, API keys or users): "
            "a restore only writes into an empty org, and nothing was written"
        )
        self.org = org


class LifecycleError(Conflict):
    """A transition the release rules (storage/release) forbid; the message says which.
    ``reason`` (docs/api.md section 9): ``status`` (then ``status`` is the version's),
    ``already_there``, ``no_baseline``, ``builtin``, or a subclass's own."""

    def __init__(self, message: str, reason: str = "status", status: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status

    def extras(self) -> dict[str, Any]:
        return {"status": self.status} if self.reason == "status" else {}


class VersionFrozen(LifecycleError):
    """An edit of a version that has been placed, been a rollout's candidate or
    baseline, or is named by an open review (docs/api.md section 5)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "frozen")


class ProductionChanged(Conflict):
    """The environment (production unless named) does not hold the version the caller
    expected; nothing was changed."""

    def __init__(
        self,
        prompt_ref: str,
        expected: int | None,
        current: int | None,
        environment: str = "production",
    ) -> None:
        now = (
            f"there is no {environment} version"
            if current is None
            else f"{environment} is version {current}"
        )
        wanted = f"no {environment} version" if expected is None else f"version {expected}"
        super().__init__(f"prompt '{prompt_ref}': {now}, expected {wanted}; nothing was changed")
        self.prompt_ref = prompt_ref
        self.expected = expected
        self.current = current
        self.environment = environment

    reason: str = "version_changed"

    def extras(self) -> dict[str, Any]:
        extras: dict[str, Any] = {"current_version": self.current}
        if self.environment == "production":
            extras["current_production_version"] = self.current
        return extras


class ReviewStale(ProductionChanged):
    """The last approval of a review found its environment holding another version than
    at the request: the review is now ``stale`` (that is recorded) and nothing was
    promoted."""

    def __init__(
        self,
        review_id: str,
        prompt_ref: str,
        expected: int | None,
        current: int | None,
        environment: str,
    ) -> None:
        super().__init__(prompt_ref, expected, current, environment)
        self.args = (f"review {review_id} is stale: {self.args[0]}",)
        self.review_id = review_id

    reason = "review_stale"

    def extras(self) -> dict[str, Any]:
        return {**super().extras(), "review_id": self.review_id}


class EnvironmentNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"environment '{name}' not found")
        self.name = name


class NothingInEnvironment(NotFound):
    def __init__(self, prompt_ref: str, environment: str) -> None:
        super().__init__(f"prompt '{prompt_ref}' has no version in environment '{environment}'")
        self.prompt_ref = prompt_ref
        self.environment = environment


class EnvironmentExists(Conflict):
    reason = "exists"

    def __init__(self, name: str) -> None:
        super().__init__(f"environment '{name}' already exists")
        self.name = name


class ReviewRequired(Conflict):
    """A direct promotion into a protected environment: open a review instead."""

    reason = "review_required"

    def __init__(self, environment: str, required_approvals: int) -> None:
        super().__init__(
            f"environment '{environment}' needs {required_approvals} approval(s): "
            "request a review instead; nothing was changed"
        )
        self.environment = environment


class ReviewNotFound(NotFound):
    def __init__(self, review_id: str) -> None:
        super().__init__(f"review '{review_id}' not found")
        self.review_id = review_id


class ReviewExists(Conflict):
    """An open review of the same prompt, environment and version exists already."""

    def __init__(self, review_id: str) -> None:
        super().__init__(f"review {review_id} of this version and environment is open already")
        self.review_id = review_id

    reason = "review_open"

    def extras(self) -> dict[str, Any]:
        return {"review_id": self.review_id}


class ReviewClosed(Conflict):
    def __init__(self, review_id: str, status: str) -> None:
        super().__init__(f"review {review_id} is {status}: only an open review can be decided")
        self.review_id = review_id
        self.status = status

    reason = "review_decided"

    def extras(self) -> dict[str, Any]:
        return {"review_id": self.review_id}


class AlreadyApproved(Conflict):
    def __init__(self, review_id: str) -> None:
        super().__init__(f"you have approved review {review_id} already")
        self.review_id = review_id

    reason = "review_decided"

    def extras(self) -> dict[str, Any]:
        return {"review_id": self.review_id}


class ReviewForbidden(StorageError):
    """A decision the two-person rule forbids this person; the message says why."""


class NoRollbackTarget(LifecycleError):
    """A rollback with nothing to roll back to; ``why`` says which case (the cases and
    their messages: storage/lifecycle.py ROLLBACK_REFUSALS). Its ``reason``:
    ``already_there`` when the target is what the environment holds, else
    ``nothing_to_roll_back``."""

    def __init__(self, why: str, message: str) -> None:
        super().__init__(message, "already_there" if why == "current" else "nothing_to_roll_back")
        self.why = why


class RolloutNotFound(NotFound):
    """No rollout in the environment (or, when the caller named one, not that one)."""

    def __init__(self, prompt_ref: str, environment: str, rollout_id: str | None = None) -> None:
        what = "no rollout" if rollout_id is None else f"no rollout {rollout_id}"
        super().__init__(f"prompt '{prompt_ref}' has {what} in environment '{environment}'")
        self.prompt_ref = prompt_ref
        self.environment = environment


class RolloutInProgress(Conflict):
    """The environment has a rollout of the prompt, which blocks this change; the
    message (storage/lifecycle.py) says what to do instead."""

    def __init__(self, message: str, rollout_id: str) -> None:
        super().__init__(message)
        self.rollout_id = rollout_id

    reason = "rollout_running"

    def extras(self) -> dict[str, Any]:
        return {"rollout_id": self.rollout_id}


class IncludeRefused(Conflict):
    """A version whose includes cannot stand in the environment it would enter
    (docs/composition.md); nothing was changed. ``reason``: ``include_missing``
    (``missing``: the prompts that resolve to nothing there), ``include_cycle``
    (``cycle``: the prompts around it) or ``include_depth`` (``chain``: a read that
    would nest deeper than allowed)."""

    _FIELDS: ClassVar[dict[str, str]] = {
        "missing": "include_missing",
        "cycle": "include_cycle",
        "depth": "include_depth",
    }
    _SAY: ClassVar[dict[str, str]] = {
        "missing": "its includes {names} have no version in {environment}",
        "cycle": "its includes would make a cycle in {environment}: {names}",
        "depth": "a read in {environment} would nest includes deeper than 3 levels: {names}",
    }

    def __init__(self, prompt_ref: str, environment: str, kind: str, names: Sequence[str]) -> None:
        shown = ", ".join(names) if kind == "missing" else " -> ".join(names)
        said = self._SAY[kind].format(names=shown, environment=environment)
        super().__init__(f"prompt '{prompt_ref}' cannot enter {environment}: {said}")
        self.kind = kind
        self.names = list(names)
        self.reason = self._FIELDS[kind]

    def extras(self) -> dict[str, Any]:
        field = {"missing": "missing", "cycle": "cycle", "depth": "chain"}[self.kind]
        return {field: self.names}


class InUse(Conflict):
    """Deleting or taking away what other prompts include (docs/composition.md):
    ``used_by`` names them; nothing was changed."""

    reason = "in_use"

    def __init__(self, what: str, used_by: Sequence[str]) -> None:
        super().__init__(f"{what} is included by {', '.join(used_by)}; nothing was changed")
        self.used_by = list(used_by)

    def extras(self) -> dict[str, Any]:
        return {"used_by": self.used_by}


class InvalidInput(StorageError):
    pass


class StorageUnavailable(StorageError):
    """The backend did not answer. Never carries connection details to callers."""


class ContractInvalid(InvalidInput):
    """A version's ``variables_schema`` or ``examples`` that break the rules of variable
    contracts (promptsvc/templating/contract.py); ``problems`` name each one by where it is
    (``variables_schema.<variable>``, ``examples[<i>]``)."""

    def __init__(self, problems: dict[str, list[str]]) -> None:
        listed = "; ".join(f"{where}: {' '.join(what)}" for where, what in problems.items())
        super().__init__(f"invalid variable contract: {listed}")
        self.problems = problems


class ConfigInvalid(ContractInvalid):
    """A version's ``config`` that breaks the rules of model configuration
    (promptsvc/templating/config.py); ``problems`` name each one by its path
    (``config.params.temperature``). A ContractInvalid, so it answers as one does."""

    def __init__(self, problems: dict[str, list[str]]) -> None:
        super().__init__(problems)
        listed = "; ".join(f"{where}: {' '.join(what)}" for where, what in problems.items())
        self.args = (f"invalid config: {listed}",)


class BreakingPromotion(Conflict):
    """A promotion whose candidate would break callers of the version the environment
    holds, not acknowledged with ``allow_breaking``; nothing was changed. ``changes``
    are BreakingChange records."""

    def __init__(
        self, prompt_ref: str, environment: str, changes: Sequence[BreakingChange]
    ) -> None:
        listed = "; ".join(
            f"'{c.field or c.variable}'{f' of {c.prompt}' if c.prompt else ''}: {c.detail}"
            for c in changes
        )
        super().__init__(
            f"promoting into {environment} would break callers of prompt '{prompt_ref}': "
            f"{listed}; nothing was changed (send allow_breaking: true with notes to "
            "promote anyway)"
        )
        self.prompt_ref = prompt_ref
        self.environment = environment
        self.changes = tuple(changes)

    reason = "breaking_change"

    def extras(self) -> dict[str, Any]:
        return {"changes": [change.to_json() for change in self.changes]}
