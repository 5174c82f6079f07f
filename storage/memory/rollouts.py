"""Rollouts in memory (each prompt's ``rollouts``), under the one lock; the rules by
storage/release."""

from __future__ import annotations

from itertools import islice

from storage.errors import RolloutNotFound
from storage.interface import RolloutStore
from storage.memory.promotion import MemoryPromotion
from storage.memory.state import PromptState
from storage.records import InRollout, PromptVersion, Rollout


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
            return self._with_rollout(*self._held(org, prompt_ref, environment), environment)

    def _environment_page(
        self, org: str, environment: str, after: str, count: int
    ) -> tuple[str | None, list[PromptVersion | InRollout], str | None]:
        with self._lock:
            org_state = self._orgs.get(org)
            self._environment(org_state, environment)
            if org_state is None:
                return None, [], None
            held = (
                (state, number)
                for name, state in sorted(org_state.by_name.items())
                if name > after and (number := self._current(state, environment)) is not None
            )
            found = [
                self._with_rollout(state, state.versions[number], environment)
                for state, number in islice(held, count)
            ]
            return org_state.events[-1].id if org_state.events else None, found, None

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
