"""The lifecycle of a version: the rules of each transition, and how each refusal reads.

The release engine (storage/release) decides every release operation with the checks
here; backends apply what it decides, in one atomic step each, so
no caller (API, CLI, tests) can break them; the conformance suite in tests/storage
checks them on every backend:

* at most one version per prompt is ``published``;
* only ``draft`` content can be edited, and only while not frozen: once placed in any
  environment, a rollout's candidate or baseline, or named by an open review, a
  version's content never changes again (docs/api.md section 5);
* only a draft can be promoted or archived, only an archived version unarchived;
* a published version cannot be archived or deleted directly;
* a rollback walks back through the versions that were production, never returning to
  one it was rolled back from unless its ``to_version`` names it (in each environment
  along that environment's own records);
* version numbers increase from 1 and are never reused, whatever is deleted;
* an environment holds at most one version of a prompt; an archived version is in no
  environment, and cannot be placed in one;
* a protected environment (``required_approvals`` >= 1) is entered through reviews
  only (a rollback excepted), and a review is decided only by current users with
  Service Write who are neither its requester nor one of the version's authors (nor
  the owner of a key that was), each approving once; the last approval applies it
  while the environment still holds what it held at the request and the version has
  the content that was reviewed, else the review is ``stale``;
* a version enters an environment holding another only when the promotion check
  (storage/contracts.py, ``breaking_changes``) finds nothing it breaks, or the caller
  acknowledged it (``allow_breaking``, with notes); a rollback is exempt, and the
  history record says whether it was breaking;
* a rollout (at most one per prompt and environment) starts from a version the
  environment could take directly, over a baseline the environment holds, at 1-99%,
  checked as a promotion against that baseline; while it lasts nothing else enters that
  environment (promotion, rollback, review), and archiving or deleting its candidate or
  baseline ends it (aborted); completing it enters the candidate as a promotion would,
  checked again.

Each check raises the refusal (LifecycleError and its kinds, each with its ``reason``)
or returns; every message is written here once.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal, TypeAlias

from storage.errors import (
    BreakingPromotion,
    EnvironmentNotFound,
    InvalidInput,
    LifecycleError,
    NoRollbackTarget,
    ProductionChanged,
    ReviewClosed,
    ReviewForbidden,
    ReviewRequired,
    RolloutInProgress,
)
from storage.records import (
    PRODUCTION,
    BreakingChange,
    Environment,
    PromotionRecord,
    PromptVersion,
    Review,
    Rollout,
)


class _Unguarded(enum.Enum):
    UNGUARDED = "unguarded"


# A promotion or rollback's expectation of the production version at the moment of the
# change: a number, None for "no production version", or UNGUARDED for no check at all
# (None cannot say that: it is an expectation of its own).
UNGUARDED: Final = _Unguarded.UNGUARDED
Expected: TypeAlias = int | Literal[_Unguarded.UNGUARDED] | None

# The message of each refusal of a version's transition, by action, and by action and
# the version's status where that status has a message of its own.
REFUSALS: Final = {
    "edit": "version {n} is {status}: only draft content can be edited",
    "promote": "version {n} is {status}: only a draft can be promoted",
    "archive": "version {n} is {status}: only a draft can be archived",
    "archive/published": "version {n} is published: promote another version instead",
    "unarchive": "version {n} is {status}: only an archived version can be unarchived",
    "delete": "version {n} is published: promote another version before deleting it",
    "place": "version {n} is {status}: an archived version cannot be placed in an environment",
    "place/here": "version {n} is in this environment already",
}

# Environment names: lower case, as in a URL path; "latest" names a version already.
ENVIRONMENT_NAME: Final = re.compile(r"[a-z][a-z0-9-]{0,31}")
RESERVED_ENVIRONMENTS: Final = ("latest",)
MAX_APPROVALS: Final = 3

# Why a person may not decide a review, and how each reason reads.
REVIEW_REFUSALS: Final = {
    "requester": "you requested review {review_id}: another person must approve it",
    "author": "you wrote version {version}: another person must approve review {review_id}",
    "cancel": "only the requester of review {review_id} or a Service Admin can cancel it",
    # People, not identities: a key's owner counts as the one who used it.
    "requester_key": "review {review_id} was requested with a key you own: another person "
    "must approve it",
    "author_key": "version {version} was written or edited by you or with a key you own: "
    "another person must approve review {review_id}",
    # The approver's current record, whatever the token still says.
    "disabled": "your account is disabled: you cannot decide review {review_id}",
    "role": "your role is {role} now: deciding review {review_id} needs Service Write",
}
# The roles that may decide a review (identity/roles.py spells them too).
DECIDING_ROLES: Final = ("Service Write", "Service Admin")
# Why an approval applies nothing although the environment did not move.
DIGEST_CHANGED: Final = (
    "review {review_id} is stale: version {version} is not the content that was reviewed "
    "(content_digest {digest}); nothing was changed"
)
FROZEN: Final = (
    "version {n} has been placed in an environment or reviewed: its content cannot change; "
    "create a new version instead"
)

ALLOW_BREAKING_NOTES: Final = "allow_breaking needs notes saying why the break is acceptable"

# Why a rollback has no target, and how each reason reads.
ROLLBACK_REFUSALS: Final = {
    "no_production": "prompt '{prompt}' has no {env} version to roll back from",
    "first": "version {current} is the first {env} version of prompt '{prompt}': "
    "there is no earlier one to roll back to",
    "deleted": "version {target}, {env} before version {current}, has been deleted",
    "missing": "version {target} of prompt '{prompt}' does not exist (never created, or deleted)",
    "never": "version {target} of prompt '{prompt}' has never been {env}",
    "current": "version {target} is {env} already",
}


# A rollout's percent: 100 is a completion, 0 an abort.
MIN_PERCENT: Final = 1
MAX_PERCENT: Final = 99

# Why a rollout cannot start or a change is refused because of one, and how each reads.
ROLLOUT_REFUSALS: Final = {
    "no_baseline": "environment '{env}' holds no version of prompt '{prompt}': a rollout "
    "needs a version to keep serving; promote version {n} instead",
    "busy": "prompt '{prompt}' has rollout {rollout_id} in environment '{env}': complete or "
    "abort it before {action}; nothing was changed",
}
# What a rollout in progress blocks, by the action that asked (for "busy").
ROLLOUT_BLOCKS: Final = {
    "start": "starting another",
    "promote": "promoting into that environment",
    "rollback": "rolling that environment back",
    "review": "applying a review there",
}


def refusal(action: str, number: int | str, status: str) -> LifecycleError:
    """The error refusing ``action`` on version ``number``, whose status is ``status``."""
    template = REFUSALS.get(f"{action}/{status}", REFUSALS[action])
    if action == "place/here":
        return LifecycleError(template.format(n=number, status=status), "already_there")
    return LifecycleError(template.format(n=number, status=status), "status", status)


def no_rollback_target(
    reason: str,
    prompt_ref: str,
    current: int | None,
    target: int | None = None,
    environment: str = PRODUCTION,
) -> NoRollbackTarget:
    """The error refusing a rollback of ``prompt_ref`` in ``environment`` for ``reason``
    (ROLLBACK_REFUSALS)."""
    message = ROLLBACK_REFUSALS[reason].format(
        prompt=prompt_ref, current=current, target=target, env=environment
    )
    return NoRollbackTarget(reason, message)


def check_breaking(
    prompt_ref: str,
    environment: str,
    changes: Sequence[BreakingChange],
    allow_breaking: bool,
) -> bool:
    """Whether a promotion with the check's ``changes`` is breaking; BreakingPromotion
    (nothing changes) when it is and the caller did not acknowledge it."""
    if changes and not allow_breaking:
        raise BreakingPromotion(prompt_ref, environment, changes)
    return bool(changes)


def check_acknowledgement(allow_breaking: bool, notes: str | None) -> None:
    """``allow_breaking`` is acknowledged with notes (they go into the history)."""
    if allow_breaking and not (notes and notes.strip()):
        raise InvalidInput(ALLOW_BREAKING_NOTES)


def check_editable(version: PromptVersion) -> None:
    if version.status != "draft":
        raise refusal("edit", version.version, version.status)


def check_promotable(version: PromptVersion) -> None:
    if version.status != "draft":
        raise refusal("promote", version.version, version.status)


def check_archivable(version: PromptVersion) -> None:
    if version.status != "draft":
        raise refusal("archive", version.version, version.status)


def check_unarchivable(version: PromptVersion) -> None:
    if version.status != "archived":
        raise refusal("unarchive", version.version, version.status)


def check_deletable(version: PromptVersion) -> None:
    if version.status == "published":
        raise refusal("delete", version.version, version.status)


def check_expected(
    prompt_ref: str, expected: Expected, current: int | None, environment: str = PRODUCTION
) -> None:
    """ProductionChanged unless the environment holds what a guarded change expects."""
    if expected is not UNGUARDED and expected != current:
        raise ProductionChanged(prompt_ref, expected, current, environment)


# ----------------------------------------------------------------------- environments


def environment_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a new environment, or None when it can."""
    if not ENVIRONMENT_NAME.fullmatch(name):
        return "must match ^[a-z][a-z0-9-]{0,31}$"
    # production is no problem of the name: it exists already (409 ``exists``).
    if name in RESERVED_ENVIRONMENTS:
        return f"'{name}' is reserved"
    return None


def default_production() -> Environment:
    """Production as every org has it until a Service Admin changes it."""
    return Environment(PRODUCTION, 0, None, None)


def with_production(stored: Mapping[str, Environment]) -> dict[str, Environment]:
    """An org's environments by name from those it stores: production first (as
    stored, else :func:`default_production`), the others in their stored order."""
    production = stored.get(PRODUCTION) or default_production()
    return {PRODUCTION: production, **{n: e for n, e in stored.items() if n != PRODUCTION}}


def environment_in(stored: Mapping[str, Environment], name: str) -> Environment:
    """Environment ``name`` of an org that stores ``stored``; EnvironmentNotFound."""
    found = stored.get(name) or (default_production() if name == PRODUCTION else None)
    if found is None:
        raise EnvironmentNotFound(name)
    return found


@dataclass(frozen=True, slots=True)
class EnvironmentChange:
    """What ``update_environment`` changes: what is not None (``description=""``
    clears it)."""

    required_approvals: int | None = None
    description: str | None = None

    def applied(self, environment: Environment) -> Environment:
        if self.required_approvals is not None:
            environment = replace(environment, required_approvals=self.required_approvals)
        if self.description is not None:
            environment = replace(environment, description=self.description or None)
        return environment


def check_unprotected(environment: Environment) -> None:
    """ReviewRequired when a direct promotion into ``environment`` needs a review."""
    if environment.protected:
        raise ReviewRequired(environment.name, environment.required_approvals)


def check_placeable(version: PromptVersion, current: int | None) -> None:
    """A version may enter an environment other than production unless it is archived
    or is what the environment holds (``current``) already."""
    if version.status == "archived":
        raise refusal("place", version.version, version.status)
    if version.version == current:
        raise refusal("place/here", version.version, version.status)


def check_enterable(environment: str, version: PromptVersion, current: int | None) -> None:
    """The version's own rule for entering ``environment`` (which holds ``current``)."""
    if environment == PRODUCTION:
        check_promotable(version)
    else:
        check_placeable(version, current)


# ----------------------------------------------------------------------- rollouts


def check_percent(percent: int) -> None:
    """InvalidInput unless 1 <= percent <= 99 (the API validated it already)."""
    if isinstance(percent, bool) or not MIN_PERCENT <= percent <= MAX_PERCENT:
        raise InvalidInput(f"percent must be {MIN_PERCENT}-{MAX_PERCENT}")


def rollout_busy(
    prompt_ref: str, environment: str, rollout_id: str, action: str
) -> RolloutInProgress:
    """The error refusing ``action`` (ROLLOUT_BLOCKS) while rollout ``rollout_id`` runs
    in ``environment``."""
    message = ROLLOUT_REFUSALS["busy"].format(
        prompt=prompt_ref, rollout_id=rollout_id, env=environment, action=ROLLOUT_BLOCKS[action]
    )
    return RolloutInProgress(message, rollout_id)


def check_no_rollout(prompt_ref: str, rollout: Rollout | None, action: str) -> None:
    """RolloutInProgress when the environment has ``rollout`` (None: it has none)."""
    if rollout is not None:
        raise rollout_busy(prompt_ref, rollout.environment, rollout.rollout_id, action)


def no_baseline(prompt_ref: str, environment: str, number: int | str) -> LifecycleError:
    return LifecycleError(
        ROLLOUT_REFUSALS["no_baseline"].format(prompt=prompt_ref, env=environment, n=number),
        "no_baseline",
    )


def rollouts_ended_by(number: int, rollouts: Sequence[Rollout]) -> list[Rollout]:
    """The rollouts that archiving or deleting version ``number`` ends (aborted): those
    whose candidate or baseline it is."""
    return [r for r in rollouts if number in (r.candidate_version, r.baseline_version)]


# ----------------------------------------------------------------------- reviews


def check_open(review: Review) -> None:
    if review.status != "open":
        raise ReviewClosed(review.review_id, review.status)


def review_refusal(
    reason: str, review_id: str, version: int | str, role: str | None = None
) -> ReviewForbidden:
    """The error refusing a person's decision on a review, for ``reason`` (REVIEW_REFUSALS)."""
    message = REVIEW_REFUSALS[reason].format(review_id=review_id, version=version, role=role)
    return ReviewForbidden(message)


def production_line(history: Sequence[PromotionRecord]) -> list[int]:
    """The versions a rollback walks back through, oldest first, production last.

    ``history`` is the prompt's promotion records, oldest first. Each promotion extends
    the line; a promotion or rollback to a version already on it goes back to it, and
    the versions after it leave the line: they were rolled back from, and a rollback
    returns to one only when its ``to_version`` names it.
    """
    line: list[int] = []
    for record in history:
        number = record.version_number
        if number in line:
            del line[line.index(number) + 1 :]
        else:
            line.append(number)
    return line


def previous_production(history: Sequence[PromotionRecord]) -> int | None:
    """The version a rollback without ``to_version`` makes production (whether it still
    exists or not), or None when production is the first on the line."""
    line = production_line(history)
    return line[-2] if len(line) > 1 else None


def rollback_target(
    prompt_ref: str,
    production: int | None,
    history: Sequence[PromotionRecord],
    to_version: int | None,
    find: Callable[[int], PromptVersion | None],
    environment: str = PRODUCTION,
) -> int:
    """The version a rollback makes production (or places in ``environment``):
    ``to_version``, or else the one before the current one on the line of
    :func:`production_line` of that environment's records. ``history`` is the prompt's
    promotion records, oldest first (those of other environments are skipped); ``find``
    gives a kept version by number (None: it does not exist). Raises NoRollbackTarget
    when there is nothing to roll back to."""
    history = [record for record in history if record.environment == environment]
    if environment != PRODUCTION:
        return _environment_rollback_target(
            prompt_ref, production, history, to_version, find, environment
        )
    if production is None:
        raise no_rollback_target("no_production", prompt_ref, None)
    target = to_version
    if target is None:
        target = previous_production(history)
        if target is None:
            raise no_rollback_target("first", prompt_ref, production)
        if find(target) is None:
            raise no_rollback_target("deleted", prompt_ref, production, target)
    elif find(target) is None:
        raise no_rollback_target("missing", prompt_ref, production, target)
    if target == production:
        raise no_rollback_target("current", prompt_ref, production, target)
    version = find(target)
    if version is None or version.promoted_at is None:
        raise no_rollback_target("never", prompt_ref, production, target)
    return target


def rollback_notes(number: int) -> str:
    """A rollback's notes when none are given."""
    return f"rollback to v{number}"


def _environment_rollback_target(
    prompt_ref: str,
    current: int | None,
    history: Sequence[PromotionRecord],
    to_version: int | None,
    find: Callable[[int], PromptVersion | None],
    environment: str,
) -> int:
    """rollback_target's rule in an environment other than production (the same line,
    of that environment's records), where a version "was there" when a record of that
    environment placed it; an archived target cannot be placed again (check_placeable)."""
    if current is None:
        raise no_rollback_target("no_production", prompt_ref, None, None, environment)
    target = to_version
    if target is None:
        target = previous_production(history)
        if target is None:
            raise no_rollback_target("first", prompt_ref, current, None, environment)
        if find(target) is None:
            raise no_rollback_target("deleted", prompt_ref, current, target, environment)
    elif find(target) is None:
        raise no_rollback_target("missing", prompt_ref, current, target, environment)
    if target == current:
        raise no_rollback_target("current", prompt_ref, current, target, environment)
    if not any(record.version_number == target for record in history):
        raise no_rollback_target("never", prompt_ref, current, target, environment)
    version = find(target)
    assert version is not None
    check_placeable(version, current)
    return target
