"""Environments and reviews in memory; the rules by storage/lifecycle.py."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from storage import contracts, lifecycle
from storage.cursors import decode_number_cursor, encode_cursor
from storage.errors import (
    EnvironmentExists,
    LifecycleError,
    NoProductionVersion,
    NothingInEnvironment,
    ReviewExists,
    ReviewNotFound,
    ReviewStale,
    VersionNotFound,
)
from storage.ids import new_id
from storage.interface import ReleaseStore
from storage.memory.promotion import MemoryPromotion
from storage.memory.state import OrgState
from storage.records import (
    PRODUCTION,
    Approval,
    Environment,
    Page,
    Promotion,
    PromptVersion,
    Review,
    Rollout,
)
from storage.release import content_digest


class MemoryReleases(MemoryPromotion, ReleaseStore):
    """Environments (placements live in each prompt's state) and reviews."""

    # -- environments

    def list_environments(self, org: str) -> list[Environment]:
        with self._lock:
            org_state = self._orgs.get(org)
            stored = dict(org_state.environments) if org_state else {}
        production = stored.pop(PRODUCTION, None) or lifecycle.default_production()
        return [production, *stored.values()]

    def get_environment(self, org: str, name: str) -> Environment:
        with self._lock:
            return self._environment(self._orgs.get(org), name)

    def create_environment(
        self, org: str, name: str, required_approvals: int = 0, description: str | None = None
    ) -> Environment:
        environment = Environment(name, required_approvals, description, self.clock())
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
            self._environment(org_state, name)
            if name == PRODUCTION:
                raise LifecycleError("production cannot be deleted")
            assert org_state is not None
            del org_state.environments[name]
            for state in org_state.by_name.values():
                rollout = state.rollouts.get(name)
                if rollout is not None:
                    self._end_rollout(
                        org, state, rollout, "rollout.aborted", actor, request_id, now
                    )
                number = state.placements.pop(name, None)
                if number is not None:
                    kept = set(state.versions[number].placements) - {name}
                    self._set_placements(state, number, kept)
            # open_reviews keeps request order: the events follow it.
            for key, review_id in list(org_state.open_reviews.items()):
                if key[1] == name:
                    review = lifecycle.closed(org_state.reviews[review_id], "cancelled", now)
                    self._save_review(org_state, review)
                    self._review_event(
                        org_state, "review.cancelled", review, actor, request_id, now
                    )

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

    def request_review(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        environment: str,
        requested_by: str,
        notes: str | None = None,
        rollout_percent: int | None = None,
        *,
        request_id: str | None = None,
        allow_breaking: bool = False,
    ) -> Review:
        now = self.clock()
        lifecycle.check_acknowledgement(allow_breaking, notes)
        with self._lock:
            state = self._state(org, prompt_ref)
            number = self._number(state, prompt_ref, version_ref)
            org_state = self._orgs[org]
            env = self._environment(org_state, environment)
            version = state.versions[number]
            key = (state.prompt.prompt_id, environment, number)
            if key in org_state.open_reviews:
                raise ReviewExists(org_state.open_reviews[key])
            current = self._current(state, environment)
            if rollout_percent is None:
                lifecycle.check_enterable(environment, version, current)
            else:
                lifecycle.check_percent(rollout_percent)
                lifecycle.check_rollout_start(prompt_ref, environment, version, current)
            changes = contracts.breaking_changes(self._held(state, environment), version)
            lifecycle.check_breaking(prompt_ref, environment, changes, allow_breaking)
            review = Review(
                review_id=new_id("rv_"),
                prompt_id=state.prompt.prompt_id,
                prompt_name=state.prompt.name,
                version=number,
                version_id=version.version_id,
                environment=environment,
                status="open",
                requested_by=requested_by,
                requested_at=now,
                notes=notes,
                expected_version=current,
                required_approvals=max(env.required_approvals, 1),
                approvals=(),
                rejected_by=None,
                decided_at=None,
                rollout_percent=rollout_percent,
                version_author=version.created_by,
                allow_breaking=allow_breaking,
                breaking=tuple(changes),
                content_digest=content_digest(version),
            )
            org_state.review_counter += 1
            org_state.reviews[review.review_id] = review
            org_state.review_seq[review.review_id] = org_state.review_counter
            org_state.open_reviews[key] = review.review_id
            self._review_event(org_state, "review.requested", review, requested_by, request_id, now)
            return review

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

    def approve_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        username: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> tuple[Review, Promotion | Rollout | None]:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            review = self._review(org_state, review_id)
            assert org_state is not None
            lifecycle.check_approver(review, user_id)
            review = lifecycle.with_approval(review, Approval(user_id, username, now, comment))
            if not lifecycle.complete(review):
                self._save_review(org_state, review)
                self._review_event(org_state, "review.approved", review, user_id, request_id, now)
                return review, None
            state = org_state.by_id[review.prompt_id]
            self._environment(org_state, review.environment)
            current = self._current(state, review.environment)
            if current != review.expected_version:
                review = lifecycle.closed(review, "stale", now)
                self._save_review(org_state, review)
                self._review_event(org_state, "review.approved", review, user_id, request_id, now)
                raise ReviewStale(
                    review_id,
                    review.prompt_name,
                    review.expected_version,
                    current,
                    review.environment,
                )
            if review.version not in state.versions:
                raise VersionNotFound(review.prompt_name, str(review.version))
            candidate = state.versions[review.version]
            if review.rollout_percent is None:
                lifecycle.check_enterable(review.environment, candidate, current)
            else:
                lifecycle.check_rollout_start(
                    review.prompt_name, review.environment, candidate, current
                )
            lifecycle.check_no_rollout(
                review.prompt_name, state.rollouts.get(review.environment), "review"
            )
            changes = contracts.breaking_changes(self._held(state, review.environment), candidate)
            breaking = lifecycle.check_breaking(
                review.prompt_name, review.environment, changes, review.allow_breaking
            )
            review = lifecycle.closed(review, "applied", now)
            self._save_review(org_state, review)
            self._review_event(org_state, "review.approved", review, user_id, request_id, now)
            applied: Promotion | Rollout
            if review.rollout_percent is not None:
                applied = self._begin_rollout(
                    org,
                    state,
                    review.version,
                    review.environment,
                    review.rollout_percent,
                    user_id,
                    now,
                    request_id,
                )
                self._review_event(org_state, "review.applied", review, user_id, request_id, now)
                return review, applied
            applied = self._enter(
                org,
                state,
                review.version,
                review.environment,
                user_id,
                review.notes,
                now,
                request_id,
                review=review,
                breaking=breaking,
            )
            self._review_event(org_state, "review.applied", review, user_id, request_id, now)
            return review, applied

    def reject_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> Review:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            review = self._review(org_state, review_id)
            assert org_state is not None
            lifecycle.check_rejecter(review, user_id)
            review = lifecycle.closed(
                review, "rejected", now, rejected_by=user_id, rejection_comment=comment
            )
            self._save_review(org_state, review)
            self._review_event(org_state, "review.rejected", review, user_id, request_id, now)
            return review

    def cancel_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        admin: bool = False,
        *,
        request_id: str | None = None,
    ) -> Review:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            review = self._review(org_state, review_id)
            assert org_state is not None
            lifecycle.check_canceller(review, user_id, admin)
            review = lifecycle.closed(review, "cancelled", now)
            self._save_review(org_state, review)
            self._review_event(org_state, "review.cancelled", review, user_id, request_id, now)
            return review

    # -- helpers (lock held)

    @staticmethod
    def _review(org_state: OrgState | None, review_id: str) -> Review:
        if org_state is None or review_id not in org_state.reviews:
            raise ReviewNotFound(review_id)
        return org_state.reviews[review_id]

    @staticmethod
    def _save_review(org_state: OrgState, review: Review) -> None:
        """Keep ``review``; a closed one leaves the index of open reviews."""
        org_state.reviews[review.review_id] = review
        if review.status != "open":
            key = (review.prompt_id, review.environment, review.version)
            if org_state.open_reviews.get(key) == review.review_id:
                del org_state.open_reviews[key]

    def _review_event(
        self,
        org_state: OrgState,
        kind: str,
        review: Review,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> None:
        state = org_state.by_id[review.prompt_id]
        version = state.versions.get(review.version)
        self._record(
            org_state,
            kind,
            state.prompt,
            version,
            actor,
            request_id,
            now,
            environment=review.environment,
            review_id=review.review_id,
            status=review.status,
        )
