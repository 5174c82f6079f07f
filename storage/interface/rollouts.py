"""Gradual rollouts (docs/api.md section 18), and the environment read that carries them.

A rollout serves a candidate version to a share of an environment's callers while the
environment keeps its version (the baseline). Which caller gets which is not stored:
the API and the SDKs compute it from the rollout's id and percent. At most one rollout
runs per prompt and environment. The rules are decided by storage/release (their
messages are in storage/lifecycle.py); every backend applies the change, its history
record and its events in one atomic step:

* start: ``rollout.started``; set percent: ``rollout.updated``; complete: the candidate
  enters the environment as a promotion would (``version.promoted`` and a history
  record both carrying ``rollout_id``), then ``rollout.completed``; abort:
  ``rollout.aborted``. Every ``rollout.*`` event names the candidate as its version,
  the baseline as ``previous_version``, and carries ``rollout_id`` and ``percent``.
* while a rollout runs, a direct promotion, a rollback or an applied review into its
  environment is refused (RolloutInProgress); its candidate and baseline are frozen
  for good (an edit: VersionFrozen);
* archiving or deleting its candidate or baseline, or deleting its environment, ends
  it: ``rollout.aborted`` in the same step (deleting the prompt drops it silently, with
  everything else of the prompt).
"""

from __future__ import annotations

import abc
from typing import Any

from storage.cursors import decode_cursor, encode_cursor
from storage.environment_page import DEFAULT_ENVIRONMENT_PAGE, EnvironmentPage, item_name
from storage.interface.core import StorageCore
from storage.lifecycle import UNGUARDED, Expected
from storage.records import IncludeReads, InRollout, Promotion, PromptVersion, Rollout
from storage.usage_records import Guard


class RolloutStore(StorageCore):
    """Rollouts of one org's prompts, by prompt and environment."""

    @abc.abstractmethod
    def start_rollout(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        environment: str,
        percent: int,
        started_by: str,
        expected: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
        allow_breaking: bool = False,
        notes: str | None = None,
        guard: Guard | None = None,
    ) -> Rollout:
        """Start serving the version to ``percent`` (1-99) of ``environment``'s keyed
        callers. The checks of a promotion apply (PromptNotFound, VersionNotFound,
        EnvironmentNotFound, ReviewRequired for a protected environment, the
        ``expected`` guard: ProductionChanged, the version's own LifecycleError), then
        LifecycleError when the environment holds nothing (no baseline),
        RolloutInProgress when it has a rollout already, and the promotion check of
        the candidate against the baseline (storage/contracts.py: BreakingPromotion
        unless ``allow_breaking``, which needs ``notes``: InvalidInput; the notes are
        not kept). Nothing changes but the rollout, its ``guard`` (docs/usage.md) and
        its ``rollout.started`` event, in one step: the candidate keeps its status."""

    @abc.abstractmethod
    def get_rollout(self, org: str, prompt_ref: str, environment: str) -> Rollout:
        """Raises PromptNotFound, EnvironmentNotFound, RolloutNotFound."""

    @abc.abstractmethod
    def list_rollouts(self, org: str, prompt_ref: str) -> list[Rollout]:
        """The prompt's rollouts, by environment name. Raises PromptNotFound."""

    @abc.abstractmethod
    def set_rollout_percent(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        percent: int,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Rollout:
        """A new percent (1-99; InvalidInput else) and ``updated_at``; writes
        ``rollout.updated``. With ``rollout_id``, only when that is the environment's
        rollout (else RolloutNotFound, as when there is none)."""

    @abc.abstractmethod
    def complete_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        promoted_by: str,
        notes: str | None = None,
        archive_previous: bool = True,
        *,
        rollout_id: str | None = None,
        request_id: str | None = None,
        allow_breaking: bool = False,
    ) -> Promotion:
        """In one atomic step: the candidate becomes the environment's version as
        :meth:`PromptStore.promote` makes it (in production published, the baseline
        archived or a draft), the history record carries ``rollout_id``, the rollout
        ends; writes ``version.promoted`` then ``rollout.completed``. No review is
        needed. The promotion check runs again, candidate against baseline:
        BreakingPromotion (nothing changes, the rollout goes on) unless
        ``allow_breaking`` with ``notes``, and the record says ``breaking``.
        RolloutNotFound as for :meth:`set_rollout_percent`."""

    @abc.abstractmethod
    def abort_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
        guard: dict[str, Any] | None = None,
    ) -> Rollout:
        """End the rollout, the environment keeping its baseline; returns it as it was
        when it ended (``updated_at`` the end). Writes ``rollout.aborted`` with
        ``reason`` ``manual``, or ``guard`` and these figures when ``guard`` is given
        (the guard's abort, docs/usage.md). RolloutNotFound as for
        :meth:`set_rollout_percent`: with ``rollout_id``, several hosts aborting the
        same rollout end it once."""

    @abc.abstractmethod
    def read_environment(
        self, org: str, prompt_ref: str, environment: str
    ) -> PromptVersion | InRollout:
        """The hot read of an environment: the version it holds, or, while a rollout
        runs there, that version with the rollout and its candidate (one snapshot where
        the backend can). Raises as :meth:`ReleaseStore.get_in_environment`."""

    def read_environment_including(
        self, org: str, prompt_ref: str, environment: str
    ) -> tuple[PromptVersion | InRollout, IncludeReads]:
        """:meth:`read_environment`, with what the includes of the versions read
        resolve to (floating ones in ``environment``) as far as the backend reads them
        in the same step (Redis: the same script): a read of a prompt with includes in
        one round trip. What is not there the caller reads (storage/neighbours.py); by
        default nothing is."""
        return self.read_environment(org, prompt_ref, environment), {}

    def read_environment_page(
        self,
        org: str,
        environment: str,
        limit: int = DEFAULT_ENVIRONMENT_PAGE,
        cursor: str | None = None,
    ) -> EnvironmentPage:
        """Up to ``limit`` prompts' reads of ``environment`` (each as
        :meth:`read_environment` answers it; prompts it holds no version of are left
        out), by prompt name after ``cursor``, with the org's newest event id, in one
        round trip where the backend can (SQL: one statement; Redis: one script). A
        page may hold fewer items than ``limit`` and still have a ``next_cursor``.
        EnvironmentNotFound; InvalidInput for a cursor this method did not hand out."""
        after = decode_cursor(cursor) if cursor else ""
        event_id, found, resume = self._environment_page(org, environment, after, limit + 1)
        items = found[:limit]
        if len(found) > limit:
            resume = item_name(items[-1])
        next_cursor = None if resume is None else encode_cursor(resume)
        return EnvironmentPage(environment, event_id, items, next_cursor)

    @abc.abstractmethod
    def _environment_page(
        self, org: str, environment: str, after: str, count: int
    ) -> tuple[str | None, list[PromptVersion | InRollout], str | None]:
        """In one read: the org's newest event id, and the reads of up to ``count``
        prompts named after ``after`` that have a version in ``environment``, by name;
        with the name to resume after when the read stopped short of ``count`` (None:
        it did not). Raises EnvironmentNotFound."""
