"""Usage counters and rollout guards (docs/usage.md).

What SDKs report is added to counters per bucket (storage/usage_records.py: the
buckets, and the retention rule every backend applies as it writes). A rollout's guard
is kept by the id of what it guards: a rollout's ``ro_`` id, or a review's ``rv_`` id
until the review starts its rollout. Whether a guard ends a rollout is decided by
storage/release/guard.py; the abort is :meth:`RolloutStore.abort_rollout` with the
rollout's id, so hosts that decide it at once end it once.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime

from storage.interface.core import StorageCore
from storage.usage_records import BucketSpan, Counts, Guard, UsageItem, UsageRow


class UsageStore(StorageCore):
    """One org's usage counters and guards."""

    @abc.abstractmethod
    def record_usage(self, org: str, items: Sequence[UsageItem]) -> int:
        """Add the items' counts to the buckets of now (the storage clock), hourly and
        daily, and those with a ``rollout_id`` and an ``arm`` to that rollout's arm, in
        one atomic step; answers how many items were skipped because the org has no
        such prompt (by ``prompt_id``) or version (by number). Buckets past the
        retention rule may be dropped in the same step."""

    @abc.abstractmethod
    def read_usage(
        self, org: str, prompt_ref: str, since: datetime, until: datetime, span: BucketSpan
    ) -> list[UsageRow]:
        """The prompt's buckets of ``span`` that start in ``[bucket of since, until)``,
        oldest first, then by version, environment, rollout and arm. PromptNotFound."""

    @abc.abstractmethod
    def rollout_arms(self, org: str, rollout_id: str) -> dict[str, Counts]:
        """What was counted for the rollout's arms, by arm (an arm nothing was counted
        for is left out)."""

    @abc.abstractmethod
    def set_guard(self, org: str, guarded_id: str, guard: Guard | None) -> None:
        """Keep ``guard`` for the rollout (or review) ``guarded_id``; None: drop it."""

    @abc.abstractmethod
    def get_guard(self, org: str, guarded_id: str) -> Guard | None:
        """The guard kept for ``guarded_id``, None when there is none."""
