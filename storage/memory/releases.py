"""Environments, reviews and rollouts in memory; the rules by storage/release."""

from __future__ import annotations

from itertools import islice

from storage import lifecycle, release
from storage.errors import EnvironmentExists
from storage.interface import ReleaseStore, RolloutStore
from storage.memory.promotion import MemoryPromotion
from storage.memory.state import OrgState
from storage.records import PRODUCTION, Environment, InRollout, PromptVersion, Review, Rollout
from storage.rollout_front import RolloutReads


class MemoryReleases(MemoryPromotion, RolloutReads, ReleaseStore, RolloutStore):
    """Environments (placements live in each prompt's state), reviews and rollouts (each
    prompt's ``rollouts``)."""

    # -- environments

    def _stored_environments(self, org: str) -> dict[str, Environment]:
        with self._lock:
            org_state = self._orgs.get(org)
            return dict(org_state.environments) if org_state else {}

    def _add_environment(self, org: str, environment: Environment) -> Environment:
        name = environment.name
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            if name == PRODUCTION or name in org_state.environments:
                raise EnvironmentExists(name)
            org_state.environments[name] = environment
        return environment

    def _change_environment(
        self, org: str, name: str, change: lifecycle.EnvironmentChange
    ) -> Environment:
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            environment = change.applied(self._environment(org_state, name))
            org_state.environments[name] = environment
            return environment

    def _delete_environment(self, org: str, leave: release.LeaveEnvironment) -> None:
        with self._lock:
            org_state = self._orgs.get(org)
            release.check_delete_environment(
                org_state.environments if org_state else {}, leave.environment
            )
            assert org_state is not None
            # Every prompt may leave, or none does (in_use refuses the whole deletion).
            for state in org_state.by_name.values():
                self._decide(org, state, leave, only_check=True)
            del org_state.environments[leave.environment]
            for state in list(org_state.by_name.values()):
                self._decide(org, state, leave)

    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        with self._lock:
            return self._held(org, prompt_ref, environment)[1]

    # -- reviews

    def _review_of(self, org: str, review_id: str) -> Review | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return org_state.reviews.get(review_id) if org_state else None

    def _reviews_below(
        self,
        org: str,
        prompt_ref: str | None,
        status: str | None,
        environment: str | None,
        before: int | None,
        count: int,
    ) -> list[tuple[int, Review]]:
        with self._lock:
            prompt = None if prompt_ref is None else self._state(org, prompt_ref).prompt
            org_state = self._orgs.get(org) or OrgState()
            seq = org_state.review_seq
            wanted = (
                (seq[r.review_id], r)
                for r in reversed(org_state.reviews.values())
                if (before is None or seq[r.review_id] < before)
                and (prompt is None or r.prompt_id == prompt.prompt_id)
                and status in (None, r.status)
                and environment in (None, r.environment)
            )
            return list(islice(wanted, count))

    # -- rollouts

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
