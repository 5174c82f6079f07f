"""Rollouts in memory (each prompt's ``rollouts``), under the one lock; the rules by
storage/release."""

from __future__ import annotations

from itertools import islice

from storage.interface import RolloutStore
from storage.memory.promotion import MemoryPromotion
from storage.records import InRollout, PromptVersion, Rollout
from storage.rollout_front import RolloutReads


class MemoryRollouts(MemoryPromotion, RolloutReads, RolloutStore):
    def _rollouts(self, org: str, prompt_ref: str, environment: str | None) -> list[Rollout]:
        with self._lock:
            rollouts = self._state(org, prompt_ref).rollouts
            if environment is None:
                return list(rollouts.values())
            self._environment(self._orgs[org], environment)
            return [rollouts[environment]] if environment in rollouts else []

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
                if name > after and (number := state.placements.get(environment)) is not None
            )
            found = [
                self._with_rollout(state, state.versions[number], environment)
                for state, number in islice(held, count)
            ]
            return org_state.events[-1].id if org_state.events else None, found, None
