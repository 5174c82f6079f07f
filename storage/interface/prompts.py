"""Prompts, their versions and their promotion history.

Every prompt operation is scoped by ``org`` (the realm slug): no call can see or touch
another org's data. A prompt is addressed by its name or its ``pmt_`` id
(``prompt_ref``); a version by its ``v_`` id or its number as a decimal string
(``version_ref``). The release rules every backend applies are decided by
storage/release.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from storage import lifecycle
from storage.cursors import decode_cursor, decode_number_cursor, page
from storage.ids import new_id
from storage.interface.core import StorageCore
from storage.lifecycle import UNGUARDED, Expected
from storage.records import (
    PRODUCTION,
    IncludeReads,
    Page,
    Promotion,
    PromotionRecord,
    Prompt,
    PromptVersion,
)

# Promotion records read per call when the whole history is needed.
HISTORY_PAGE = 500


class PromptStore(StorageCore):
    """Prompts and versions.

    Every method that changes a prompt or a version takes, besides its own arguments,
    who made the change (``actor``, a user id; ``created_by`` and ``promoted_by`` where
    the method already has them) and the id of the request that asked for it
    (``request_id``): both go into the change's event (storage/interface/events.py),
    appended in the same atomic step.
    """

    # -- prompts
    def create_prompt(
        self,
        org: str,
        name: str,
        prompt_type: str = "text",
        description: str | None = None,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Prompt:
        """Create a prompt. Raises PromptExists. The caller validated the name."""
        now = self.clock()
        prompt = Prompt(new_id("pmt_"), name, prompt_type, description, now, now, None, None)
        return self._add_prompt(org, prompt, actor, request_id)

    @abc.abstractmethod
    def _add_prompt(
        self, org: str, prompt: Prompt, actor: str | None, request_id: str | None
    ) -> Prompt:
        """Store the new ``prompt`` with its event in one step. Raises PromptExists."""

    @abc.abstractmethod
    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        """By name or ``pmt_`` id. Raises PromptNotFound."""

    def list_prompts(self, org: str, limit: int = 50, cursor: str | None = None) -> Page[Prompt]:
        """Prompts ordered by name. Raises InvalidInput for a cursor it did not issue."""
        found = self._prompts_after(org, decode_cursor(cursor) if cursor else "", limit + 1)
        return page([(prompt.name, prompt) for prompt in found], limit)

    @abc.abstractmethod
    def _prompts_after(self, org: str, after: str, count: int) -> list[Prompt]:
        """Up to ``count`` prompts named after ``after`` ("": from the first), by name."""

    @abc.abstractmethod
    def delete_prompt(
        self, org: str, prompt_ref: str, *, actor: str | None = None, request_id: str | None = None
    ) -> None:
        """Delete a prompt with all its versions and history (a release change:
        storage/release decides). Raises PromptNotFound; InUse while a version of
        another prompt includes it.

        A prompt created later under the same name starts again at version 1.
        """

    @abc.abstractmethod
    def list_includers(self, org: str, name: str) -> list[PromptVersion]:
        """Every version whose own content includes prompt ``name``
        (:attr:`PromptVersion.included_names`), by prompt name then number: the org's
        reverse index of includes, kept by every write of a version's content, so the
        answer costs reads proportional to it. None: an empty list."""

    # -- versions
    @abc.abstractmethod
    def create_version(
        self,
        org: str,
        prompt_ref: str,
        content: str,
        created_by: str,
        metadata: dict[str, object] | None = None,
        tags: list[str] | None = None,
        *,
        variables: Sequence[str] = (),
        sections: Sequence[str] = (),
        brought: Sequence[str] = (),
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
        request_id: str | None = None,
        person: str | None = None,
    ) -> PromptVersion:
        """New draft with the next number (atomic, never reused). ``person``: who
        ``created_by`` counts as (a user's own id, a key's owner, None: nobody); both
        are the version's ``authors``, who may not approve a review of it.

        ``variables`` are the content's placeholders and section names, ``sections``
        the section names among them, as the layer above extracted them
        (promptsvc.templating.template, which also checks chat content and sections);
        storage keeps the variables as given. ``variables_schema`` (None: the implied
        one) and ``examples`` (None: none) are the version's contract, checked against
        ``variables`` (a section's entry must be a boolean) by
        storage.contracts.validated: ContractInvalid names every problem; it may
        also declare ``brought``, the variables the content's includes bring. ``config``
        (None: none) is its model configuration, checked by
        storage.contracts.validated_config (ConfigInvalid names every problem by path)
        and kept as given.
        """

    @abc.abstractmethod
    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        """By ``v_`` id or number string. Raises PromptNotFound / VersionNotFound."""

    @abc.abstractmethod
    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        """Highest existing version number, any status. Raises PromptNotFound /
        VersionNotFound (prompt has no versions)."""

    @abc.abstractmethod
    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        """The published version. Raises PromptNotFound / NoProductionVersion."""

    def read_version_including(
        self, org: str, prompt_ref: str, version_ref: str | None
    ) -> tuple[PromptVersion, IncludeReads]:
        """:meth:`get_version` (``version_ref`` None: :meth:`get_latest`), with what its
        includes resolve to (floating ones in production) as far as the backend reads
        them in the same step, as RolloutStore.read_environment_including."""
        if version_ref is None:
            return self.get_latest(org, prompt_ref), {}
        return self.get_version(org, prompt_ref, version_ref), {}

    def list_versions(
        self,
        org: str,
        prompt_ref: str,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[PromptVersion]:
        """Newest first, optionally only one status."""
        before = decode_number_cursor(cursor)
        found = self._versions_below(org, prompt_ref, status, before, limit + 1)
        return page([(version.version, version) for version in found], limit)

    @abc.abstractmethod
    def _versions_below(
        self, org: str, prompt_ref: str, status: str | None, before: int | None, count: int
    ) -> list[PromptVersion]:
        """Up to ``count`` versions numbered below ``before`` (None: any) of ``status``
        (None: any), newest first. Raises PromptNotFound."""

    @abc.abstractmethod
    def edit_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        content: str,
        *,
        variables: Sequence[str] = (),
        sections: Sequence[str] = (),
        brought: Sequence[str] = (),
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
        actor: str | None = None,
        request_id: str | None = None,
        person: str | None = None,
    ) -> PromptVersion:
        """Replace a draft's content, its ``variables``, its contract
        (``variables_schema``, ``examples``) and its ``config`` (each given whole,
        checked as for :meth:`create_version`); ``actor`` and ``person`` (as for
        create_version) join its ``authors``. Non-draft: LifecycleError (reason
        ``status``); a frozen version (placed anywhere once, a rollout's candidate or
        baseline once, or named by an open review): VersionFrozen."""

    @abc.abstractmethod
    def promote(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        promoted_by: str,
        notes: str | None = None,
        archive_previous: bool = True,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
        environment: str = PRODUCTION,
        allow_breaking: bool = False,
    ) -> Promotion:
        """Atomically: the draft becomes published (promoted_at/by set), the previously
        published version becomes archived (or draft when ``archive_previous`` is
        False), and a history record is written. Non-draft: LifecycleError.

        With ``expected_production`` (a number, or None for "no production version"),
        the same atomic step first checks that production is that version, and when it
        is not, changes nothing and raises ProductionChanged carrying the current one.

        With another ``environment`` (storage/interface/releases.py) the version is
        placed there instead, its status unchanged: any version but an archived one,
        or the one the environment holds; the record's ``previous_version`` is what the
        environment held and ``expected_production`` guards that. Either way:
        EnvironmentNotFound, and ReviewRequired (nothing changed) when the
        environment is protected.

        The same step runs the promotion check (storage.contracts.breaking_changes)
        against the version the environment holds: when it finds breaking changes,
        nothing changes and BreakingPromotion carries them, unless ``allow_breaking``
        (which needs ``notes``, else InvalidInput); the record's ``breaking`` says
        whether it found any.
        """

    @abc.abstractmethod
    def rollback(
        self,
        org: str,
        prompt_ref: str,
        promoted_by: str,
        notes: str | None = None,
        to_version: int | None = None,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
        environment: str = PRODUCTION,
    ) -> Promotion:
        """Atomically make an earlier production version production again.

        The target is ``to_version``, or else :meth:`previous_production`: the version
        before the current one on the line of production versions, which never returns
        to a version rolled back from (storage/lifecycle.py); whatever its
        status now (archived or draft), it becomes published with promoted_at/by set,
        the current production version becomes archived, and a promotion record is
        written (``notes`` default to "rollback to v<N>"). ``expected_production``
        guards the step as in :meth:`promote`, and is checked first. The event is a
        ``version.promoted`` with the replaced version as ``previous_version``, as for
        any promotion.

        LifecycleError when there is nothing to roll back to: no production version,
        no earlier one, a target that was deleted, that was never production, or that
        is production now.

        With another ``environment`` the same rule reads that environment's records;
        the target is placed there (not when archived), nothing is archived. A
        protected environment needs no review for a rollback.

        A rollback is exempt from the promotion check (callers used its target
        before), but its record's ``breaking`` says whether the check finds changes.
        """

    def previous_production(
        self, org: str, prompt_ref: str, *, environment: str = PRODUCTION
    ) -> int | None:
        """The version a rollback without ``to_version`` would make production (or put
        back in ``environment``) now, by the rule of storage/lifecycle.py (None: there
        is none before the current one): what a page offers to roll back to. Raises
        PromptNotFound."""
        records: list[PromotionRecord] = []
        cursor = None
        while True:
            page = self.list_history(org, prompt_ref, HISTORY_PAGE, cursor)
            # Each environment has a line of its own records.
            records.extend(r for r in page.items if r.environment == environment)
            cursor = page.next_cursor
            if cursor is None:
                break
        records.reverse()  # the pages go newest first
        return lifecycle.previous_production(records)

    @abc.abstractmethod
    def archive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        """draft -> archived, and out of every environment. Published or archived:
        LifecycleError."""

    @abc.abstractmethod
    def unarchive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        """archived -> draft. Anything else: LifecycleError."""

    @abc.abstractmethod
    def delete_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Delete a draft or archived version (out of every environment); numbering is
        unchanged. Published: LifecycleError."""

    def list_history(
        self, org: str, prompt_ref: str, limit: int = 50, cursor: str | None = None
    ) -> Page[PromotionRecord]:
        """Promotion records, newest promotion first."""
        before = decode_number_cursor(cursor)
        return page(self._history_below(org, prompt_ref, before, limit + 1), limit)

    @abc.abstractmethod
    def _history_below(
        self, org: str, prompt_ref: str, before: int | None, count: int
    ) -> list[tuple[int, PromotionRecord]]:
        """(position, record) of up to ``count`` promotion records positioned below
        ``before`` (None: any; positions count promotions from 1), newest first. Raises
        PromptNotFound."""
