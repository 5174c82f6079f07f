"""Rollouts in memory (each prompt's ``rollouts``), under the one lock; the rules by
storage/lifecycle.py."""

from __future__ import annotations

from dataclasses import replace

from storage import contracts, lifecycle
from storage.errors import NoProductionVersion, NothingInEnvironment, RolloutNotFound
from storage.interface import RolloutStore
from storage.lifecycle import UNGUARDED, Expected
from storage.memory.promotion import MemoryPromotion
from storage.memory.state import PromptState
from storage.records import PRODUCTION, InRollout, Promotion, PromptVersion, Rollout


class MemoryRollouts(MemoryPromotion, RolloutStore):
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
    ) -> Rollout:
        lifecycle.check_percent(percent)
        lifecycle.check_acknowledgement(allow_breaking, notes)
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            number = self._number(state, prompt_ref, version_ref)
            lifecycle.check_unprotected(self._environment(self._orgs[org], environment))
            current = self._current(state, environment)
            lifecycle.check_expected(prompt_ref, expected, current, environment)
            candidate = state.versions[number]
            lifecycle.check_rollout_start(prompt_ref, environment, candidate, current)
            lifecycle.check_no_rollout(prompt_ref, state.rollouts.get(environment), "start")
            changes = contracts.breaking_changes(self._held(state, environment), candidate)
            lifecycle.check_breaking(prompt_ref, environment, changes, allow_breaking)
            return self._begin_rollout(
                org, state, number, environment, percent, started_by, now, request_id
            )

    def get_rollout(self, org: str, prompt_ref: str, environment: str) -> Rollout:
        with self._lock:
            return self._rollout(org, prompt_ref, environment, None)[1]

    def list_rollouts(self, org: str, prompt_ref: str) -> list[Rollout]:
        with self._lock:
            rollouts = self._state(org, prompt_ref).rollouts
            return [rollouts[name] for name in sorted(rollouts)]

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
        lifecycle.check_percent(percent)
        now = self.clock()
        with self._lock:
            state, rollout = self._rollout(org, prompt_ref, environment, rollout_id)
            rollout = replace(rollout, percent=percent, updated_at=now)
            state.rollouts[environment] = rollout
            self._rollout_event(org, state, "rollout.updated", rollout, actor, request_id, now)
            return rollout

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
        now = self.clock()
        lifecycle.check_acknowledgement(allow_breaking, notes)
        with self._lock:
            state, rollout = self._rollout(org, prompt_ref, environment, rollout_id)
            number = rollout.candidate_version
            candidate = state.versions[number]
            current = self._current(state, environment)
            # Unreachable through the rules (a rollout blocks every other way in, and
            # ends with its candidate or baseline), checked as any promotion is.
            lifecycle.check_enterable(environment, candidate, current)
            changes = contracts.breaking_changes(self._held(state, environment), candidate)
            breaking = lifecycle.check_breaking(prompt_ref, environment, changes, allow_breaking)
            promotion = self._enter(
                org,
                state,
                number,
                environment,
                promoted_by,
                notes,
                now,
                request_id,
                archive_previous=archive_previous,
                rollout=rollout,
                breaking=breaking,
            )
            self._end_rollout(
                org, state, rollout, "rollout.completed", promoted_by, request_id, now
            )
            return promotion

    def abort_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Rollout:
        now = self.clock()
        with self._lock:
            state, rollout = self._rollout(org, prompt_ref, environment, rollout_id)
            return self._end_rollout(org, state, rollout, "rollout.aborted", actor, request_id, now)

    def read_environment(
        self, org: str, prompt_ref: str, environment: str
    ) -> PromptVersion | InRollout:
        with self._lock:
            state = self._state(org, prompt_ref)
            self._environment(self._orgs[org], environment)
            number = self._current(state, environment)
            if number is None:
                if environment == PRODUCTION:
                    raise NoProductionVersion(prompt_ref)
                raise NothingInEnvironment(prompt_ref, environment)
            version = state.versions[number]
            rollout = state.rollouts.get(environment)
            if rollout is None:
                return version
            return InRollout(version, rollout, state.versions[rollout.candidate_version])

    # -- helpers (lock held)

    def _rollout(
        self, org: str, prompt_ref: str, environment: str, rollout_id: str | None
    ) -> tuple[PromptState, Rollout]:
        """The prompt's state and its rollout in ``environment`` (``rollout_id``: only
        that one)."""
        state = self._state(org, prompt_ref)
        self._environment(self._orgs[org], environment)
        rollout = state.rollouts.get(environment)
        if rollout is None or rollout_id not in (None, rollout.rollout_id):
            raise RolloutNotFound(prompt_ref, environment, rollout_id)
        return state, rollout
