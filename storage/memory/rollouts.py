"""Rollouts in memory (each prompt's ``rollouts``), under the one lock; the rules by
storage/release."""

from __future__ import annotations

from storage.cursors import decode_cursor, encode_cursor
from storage.environment_page import DEFAULT_ENVIRONMENT_PAGE, EnvironmentPage, item_name
from storage.errors import NoProductionVersion, NothingInEnvironment, RolloutNotFound
from storage.interface import RolloutStore
from storage.memory.promotion import MemoryPromotion
from storage.memory.state import PromptState
from storage.records import PRODUCTION, InRollout, PromptVersion, Rollout


class MemoryRollouts(MemoryPromotion, RolloutStore):
    def get_rollout(self, org: str, prompt_ref: str, environment: str) -> Rollout:
        with self._lock:
            return self._rollout(org, prompt_ref, environment, None)[1]

    def list_rollouts(self, org: str, prompt_ref: str) -> list[Rollout]:
        with self._lock:
            rollouts = self._state(org, prompt_ref).rollouts
            return [rollouts[name] for name in sorted(rollouts)]

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

    def read_environment_page(
        self,
        org: str,
        environment: str,
        limit: int = DEFAULT_ENVIRONMENT_PAGE,
        cursor: str | None = None,
    ) -> EnvironmentPage:
        after = decode_cursor(cursor) if cursor else None
        items: list[PromptVersion | InRollout] = []
        more = False
        with self._lock:
            org_state = self._orgs.get(org)
            self._environment(org_state, environment)
            if org_state is None:
                return EnvironmentPage(environment, None, [])
            for name in sorted(org_state.by_name):
                if after is not None and name <= after:
                    continue
                state = org_state.by_name[name]
                number = self._current(state, environment)
                if number is None:
                    continue
                if len(items) == limit:
                    more = True
                    break
                version = state.versions[number]
                rollout = state.rollouts.get(environment)
                if rollout is None:
                    items.append(version)
                else:
                    candidate = state.versions[rollout.candidate_version]
                    items.append(InRollout(version, rollout, candidate))
            event_id = org_state.events[-1].id if org_state.events else None
        next_cursor = encode_cursor(item_name(items[-1])) if more else None
        return EnvironmentPage(environment, event_id, items, next_cursor)

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
