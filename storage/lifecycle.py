"""The lifecycle of a version: which transitions are allowed, and how each refusal reads.

These rules are part of the storage interface, and every backend enforces them itself,
inside the atomic step of each operation (memory under its lock, Redis and Redis Cluster
inside the Lua scripts of storage/redis/lua), so no caller (API, CLI, tests) can break
them; the conformance suite in tests/storage checks them on every backend:

* at most one version per prompt is ``published``;
* only ``draft`` content can be edited;
* only a draft can be promoted or archived, only an archived version unarchived;
* a published version cannot be archived or deleted directly;
* a rollback walks back through the versions that were production, never returning to
  one it was rolled back from unless its ``to_version`` names it;
* version numbers increase from 1 and are never reused, whatever is deleted.

The Python backends call the functions here, with the records they hold, inside their
atomic step; each raises the refusal (LifecycleError and its kinds) or returns. The Lua
scripts check the same rules and answer a marker that storage/redis turns into the
error made here (:func:`refusal`, :func:`no_rollback_target`), so every message is
written once.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Final, Literal, TypeAlias

from storage.errors import LifecycleError, NoRollbackTarget, ProductionChanged
from storage.records import PromotionRecord, PromptVersion


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
}

# Why a rollback has no target, and how each reason reads.
ROLLBACK_REFUSALS: Final = {
    "no_production": "prompt '{prompt}' has no production version to roll back from",
    "first": "version {current} is the first production version of prompt '{prompt}': "
    "there is no earlier one to roll back to",
    "deleted": "version {target}, production before version {current}, has been deleted",
    "missing": "version {target} of prompt '{prompt}' does not exist (never created, or deleted)",
    "never": "version {target} of prompt '{prompt}' has never been production",
    "current": "version {target} is production already",
}


def refusal(action: str, number: int | str, status: str) -> LifecycleError:
    """The error refusing ``action`` on version ``number``, whose status is ``status``."""
    template = REFUSALS.get(f"{action}/{status}", REFUSALS[action])
    return LifecycleError(template.format(n=number, status=status))


def no_rollback_target(
    reason: str, prompt_ref: str, current: int | None, target: int | None = None
) -> NoRollbackTarget:
    """The error refusing a rollback of ``prompt_ref`` for ``reason`` (ROLLBACK_REFUSALS)."""
    message = ROLLBACK_REFUSALS[reason].format(prompt=prompt_ref, current=current, target=target)
    return NoRollbackTarget(reason, message)


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


def check_expected(prompt_ref: str, expected: Expected, production: int | None) -> None:
    """ProductionChanged unless production is what a guarded change expects."""
    if expected is not UNGUARDED and expected != production:
        raise ProductionChanged(prompt_ref, expected, production)


def production_line(history: Sequence[PromotionRecord]) -> list[int]:
    """The versions a rollback walks back through, oldest first, production last.

    ``history`` is the prompt's promotion records, oldest first. Each promotion extends
    the line; a promotion or rollback to a version already on it goes back to it, and
    the versions after it leave the line: they were rolled back from, and a rollback
    returns to one only when its ``to_version`` names it. storage/redis/lua/rollback.lua
    walks the history the same way.
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
) -> int:
    """The version a rollback makes production: ``to_version``, or else the one before
    production on the line of :func:`production_line`. ``history`` is the prompt's
    promotion records, oldest first; ``find`` gives a kept version by number (None: it
    does not exist). Raises NoRollbackTarget when there is nothing to roll back to."""
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
    """A rollback's notes when none are given (storage/redis/lua/rollback.lua spells the
    same)."""
    return f"rollback to v{number}"
