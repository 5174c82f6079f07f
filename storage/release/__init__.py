"""The release engine: every release rule, decided once (CONTRACT sections 24 and 30).

A decision reads one prompt's :class:`State` and one request (promotion, rollback,
review request and decisions, rollout start, change, completion and abort, archive,
unarchive, delete, edit) and either raises the refusal (a StorageError carrying its
``reason``) or returns the :class:`Change` to make: the writes, the history records,
the events and the answer. It does no I/O: a backend loads the state, calls
:func:`decide` and applies the change in one atomic step (memory under its lock, SQL
in one transaction, Redis in one script guarded by the prompt's revision).
"""

from __future__ import annotations

from storage.release.digest import content_digest
from storage.release.records import (
    AbortRollout,
    Actor,
    ApproveReview,
    ArchiveVersion,
    CancelReview,
    Change,
    CompleteRollout,
    DeleteVersion,
    EditVersion,
    LeaveEnvironment,
    Promote,
    RejectReview,
    Request,
    RequestReview,
    Rollback,
    SetPercent,
    StartRollout,
    State,
    UnarchiveVersion,
)


def authors(identity: str | None, person: str | None) -> tuple[str, ...]:
    """The ``authors`` of a version created by ``identity``, who counts as ``person``."""
    return tuple(dict.fromkeys(who for who in (identity, person) if who))


__all__ = [
    "AbortRollout",
    "Actor",
    "ApproveReview",
    "ArchiveVersion",
    "CancelReview",
    "Change",
    "CompleteRollout",
    "DeleteVersion",
    "EditVersion",
    "LeaveEnvironment",
    "Promote",
    "RejectReview",
    "Request",
    "RequestReview",
    "Rollback",
    "SetPercent",
    "StartRollout",
    "State",
    "UnarchiveVersion",
    "authors",
    "content_digest",
]
