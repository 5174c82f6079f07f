"""Environments and reviews in memory; the rules by storage/release."""

from __future__ import annotations

from dataclasses import replace

from storage import lifecycle, release
from storage.cursors import decode_number_cursor, encode_cursor
from storage.errors import (
    EnvironmentExists,
    NoProductionVersion,
    NothingInEnvironment,
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
            state = self._state(org, prompt_ref)
            self._environment(self._orgs[org], environment)
            number = self._current(state, environment)
            if number is None:
                if environment == PRODUCTION:
                    raise NoProductionVersion(prompt_ref)
                raise NothingInEnvironment(prompt_ref, environment)
            return state.versions[number]

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
            org_state = self._orgs.get(org)
            prompt_id = (
                None if prompt_ref is None else self._state(org, prompt_ref).prompt.prompt_id
            )
            found: list[Review] = []
            more = False
            reviews = org_state.reviews if org_state else {}
            for review_id in reversed(reviews):
                assert org_state is not None
                seq = org_state.review_seq[review_id]
                review = reviews[review_id]
                if before is not None and seq >= before:
                    continue
                if (
                    (prompt_id is not None and review.prompt_id != prompt_id)
                    or (status is not None and review.status != status)
                    or (environment is not None and review.environment != environment)
                ):
                    continue
                if len(found) == limit:
                    more = True
                    break
                found.append(review)
            last = org_state.review_seq[found[-1].review_id] if more and org_state else None
        return Page(found, encode_cursor(str(last)) if last is not None else None)

    # -- helpers (lock held)

    @staticmethod
    def _review(org_state: OrgState | None, review_id: str) -> Review:
        if org_state is None or review_id not in org_state.reviews:
            raise ReviewNotFound(review_id)
        return org_state.reviews[review_id]
