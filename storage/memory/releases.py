"""Environments and reviews in memory; the rules by storage/release."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

from storage import lifecycle, release
from storage.cursors import decode_number_cursor, encode_cursor
from storage.errors import (
    EnvironmentExists,
    ReviewNotFound,
)
from storage.interface import ReleaseStore
from storage.memory.promotion import MemoryPromotion
from storage.memory.state import OrgState
from storage.records import (
    PRODUCTION,
    Environment,
    Page,
    PromptVersion,
    Review,
)


class MemoryReleases(MemoryPromotion, ReleaseStore):
    """Environments (placements live in each prompt's state) and reviews."""

    # -- environments

    def list_environments(self, org: str) -> list[Environment]:
        with self._lock:
            org_state = self._orgs.get(org)
            return list(
                lifecycle.with_production(org_state.environments if org_state else {}).values()
            )

    def get_environment(self, org: str, name: str) -> Environment:
        with self._lock:
            return self._environment(self._orgs.get(org), name)

    def _add_environment(self, org: str, environment: Environment) -> Environment:
        name = environment.name
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            if name == PRODUCTION or name in org_state.environments:
                raise EnvironmentExists(name)
            org_state.environments[name] = environment
        return environment

    def update_environment(
        self,
        org: str,
        name: str,
        *,
        required_approvals: int | None = None,
        description: str | None = None,
    ) -> Environment:
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            environment = self._environment(org_state, name)
            if required_approvals is not None:
                environment = replace(environment, required_approvals=required_approvals)
            if description is not None:
                environment = replace(environment, description=description or None)
            org_state.environments[name] = environment
            return environment

    def delete_environment(
        self,
        org: str,
        name: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            release.check_delete_environment(org_state.environments if org_state else {}, name)
            assert org_state is not None
            request = release.LeaveEnvironment(
                now=now, actor=release.Actor(actor), request_id=request_id, environment=name
            )
            # Every prompt may leave, or none does (in_use refuses the whole deletion).
            for state in org_state.by_name.values():
                self._decide(org, state, request, only_check=True)
            del org_state.environments[name]
            for state in list(org_state.by_name.values()):
                self._decide(org, state, request)

    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        with self._lock:
            return self._held(org, prompt_ref, environment)[1]

    # -- reviews

    def get_review(self, org: str, review_id: str) -> Review:
        with self._lock:
            return self._review(self._orgs.get(org), review_id)

    def list_reviews(
        self,
        org: str,
        *,
        prompt_ref: str | None = None,
        status: str | None = None,
        environment: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Review]:
        before = decode_number_cursor(cursor)
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
            found = list(islice(wanted, limit + 1))
        items = [review for _, review in found[:limit]]
        return Page(items, encode_cursor(str(found[limit - 1][0])) if len(found) > limit else None)

    # -- helpers (lock held)

    @staticmethod
    def _review(org_state: OrgState | None, review_id: str) -> Review:
        if org_state is None or review_id not in org_state.reviews:
            raise ReviewNotFound(review_id)
        return org_state.reviews[review_id]
