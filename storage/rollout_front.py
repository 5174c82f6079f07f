"""RolloutStore's reads of rollouts written once for every backend, over one primitive:
a prompt's rollouts, or the one in an environment."""

from __future__ import annotations

import abc

from storage.errors import RolloutNotFound
from storage.records import Rollout


class RolloutReads(abc.ABC):
    @abc.abstractmethod
    def _rollouts(self, org: str, prompt_ref: str, environment: str | None) -> list[Rollout]:
        """The prompt's rollouts in any order; with ``environment``, the one running
        there (none: []). PromptNotFound, EnvironmentNotFound."""

    def get_rollout(self, org: str, prompt_ref: str, environment: str) -> Rollout:
        for rollout in self._rollouts(org, prompt_ref, environment):
            return rollout
        raise RolloutNotFound(prompt_ref, environment, None)

    def list_rollouts(self, org: str, prompt_ref: str) -> list[Rollout]:
        return sorted(self._rollouts(org, prompt_ref, None), key=lambda r: r.environment)
