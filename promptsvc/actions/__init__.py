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
what the server would accept. One module per kind of change: :mod:`.prompts` (prompts
and versions), :mod:`.releases` (promotions, rollbacks, rollouts, environments,
reviews), :mod:`.accounts` (keys and users), :mod:`.usage` (usage reports and
rollout guards); the role each needs in :mod:`.roles`.
"""

from __future__ import annotations

from promptsvc.actions.accounts import (
    create_key,
    create_user,
    list_keys,
    list_users,
    revoke_key,
    update_user,
)
from promptsvc.actions.prompts import (
    KEEP,
    archive_version,
    create_prompt,
    create_version,
    delete_prompt,
    delete_version,
    edit_version,
    unarchive_version,
)
from promptsvc.actions.releases import (
    abort_rollout,
    approve_review,
    cancel_review,
    complete_rollout,
    create_environment,
    delete_environment,
    promote,
    reject_review,
    request_review,
    rollback,
    set_rollout_percent,
    start_rollout,
    update_environment,
)
from promptsvc.actions.roles import ROLE_ATTRIBUTE, allowed, requires
from promptsvc.actions.usage import ended_rollouts, report_usage, set_rollout_guard

__all__ = [
    "KEEP",
    "ROLE_ATTRIBUTE",
    "abort_rollout",
    "allowed",
    "approve_review",
    "archive_version",
    "cancel_review",
    "complete_rollout",
    "create_environment",
    "create_key",
    "create_prompt",
    "create_user",
    "create_version",
    "delete_environment",
    "delete_prompt",
    "delete_version",
    "edit_version",
    "ended_rollouts",
    "list_keys",
    "list_users",
    "promote",
    "reject_review",
    "report_usage",
    "request_review",
    "requires",
    "revoke_key",
    "rollback",
    "set_rollout_guard",
    "set_rollout_percent",
    "start_rollout",
    "unarchive_version",
    "update_environment",
    "update_user",
]
