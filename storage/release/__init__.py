"""The release engine: every release rule, decided once (docs/api.md sections 5, 9 and 16).

A decision reads one prompt's :class:`State` and one request (promotion, rollback,
review request and decisions, rollout start, change, completion and abort, archive,
unarchive, delete, edit) and either raises the refusal (a StorageError carrying its
``reason``) or returns the :class:`Change` to make: the writes, the history records,
the events and the answer. It does no I/O: a backend loads the state, calls
:func:`decide` and applies the change in one atomic step (memory under its lock, SQL
in one transaction, Redis in one script guarded by the prompt's revision). The storage
methods that ask for a decision are written once too (storage/release/methods.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.release.digest import content_digest
from storage.release.includes import check_included_present
from storage.release.promotion import promote, rollback
from storage.release.records import (
    AbortRollout,
    Actor,
    ApproveReview,
    ArchiveVersion,
    CancelReview,
    Change,
    CompleteRollout,
    DeletePrompt,
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
from storage.release.reviews import (
    approve_review,
    cancel_review,
    check_approver,
    check_canceller,
    check_decider,
    reject_review,
    request_review,
)
from storage.release.rollouts import abort_rollout, complete_rollout, set_percent, start_rollout
from storage.release.versions import (
    archive_version,
    check_delete_environment,
    delete_prompt,
    delete_version,
    edit_version,
    leave_environment,
    people,
    unarchive_version,
)

_DECISIONS: dict[type[Request], Callable[[State, Any], Change]] = {
    Promote: promote,
    Rollback: rollback,
    StartRollout: start_rollout,
    SetPercent: set_percent,
    CompleteRollout: complete_rollout,
    AbortRollout: abort_rollout,
    RequestReview: request_review,
    ApproveReview: approve_review,
    RejectReview: reject_review,
    CancelReview: cancel_review,
    EditVersion: edit_version,
    ArchiveVersion: archive_version,
    UnarchiveVersion: unarchive_version,
    DeleteVersion: delete_version,
    DeletePrompt: delete_prompt,
    LeaveEnvironment: leave_environment,
}


def decide(state: State, request: Request) -> Change:
    """The change ``request`` makes to ``state``; raises the refusal when it makes none."""
    return _DECISIONS[type(request)](state, request)


__all__ = [
    "AbortRollout",
    "Actor",
    "ApproveReview",
    "ArchiveVersion",
    "CancelReview",
    "Change",
    "CompleteRollout",
    "DeletePrompt",
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
    "check_approver",
    "check_canceller",
    "check_decider",
    "check_delete_environment",
    "check_included_present",
    "content_digest",
    "decide",
    "people",
]
