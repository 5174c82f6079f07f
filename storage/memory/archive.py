"""Backup and restore of an org in memory."""

from __future__ import annotations

from dataclasses import replace

from storage.archive_front import ArchiveFront, ExportedPrompt, RestorePlan
from storage.archive_records import PromptSnapshot
from storage.interface import OrgArchive
from storage.memory.core import MemoryCore
from storage.memory.state import OrgState, PromptState
from storage.records import PRODUCTION


class MemoryArchive(MemoryCore, ArchiveFront, OrgArchive):
    def list_orgs(self) -> list[str]:
        with self._lock:
            return sorted(org for org, state in self._orgs.items() if not state.is_empty())

    def _prompt_refs(self, org: str) -> list[str]:
        with self._lock:
            return sorted((self._orgs.get(org) or OrgState()).by_name)

    def _export_prompt(self, org: str, ref: str) -> ExportedPrompt | None:
        with self._lock:
            org_state = self._orgs.get(org) or OrgState()
            state = org_state.by_name.get(ref)
            if state is None:
                return None
            prompt = PromptSnapshot(
                prompt=self._prompt(state),
                next_version=state.counter,
                versions=tuple(state.versions.values()),
                history=tuple(state.history),
            )
            pid = state.prompt.prompt_id
            return prompt, [
                (org_state.review_seq[r.review_id], r)
                for r in org_state.reviews.values()
                if r.prompt_id == pid
            ]

    def _restore(self, plan: RestorePlan) -> bool:
        by_name: dict[str, PromptState] = {}
        for restored in plan.prompts:
            item = restored.item
            versions = sorted(item.versions, key=lambda v: v.version)
            placements = {env: v.version for env, v in restored.placements}
            if restored.production is not None:
                placements[PRODUCTION] = restored.production
            by_name[item.prompt.name] = PromptState(
                prompt=replace(item.prompt, latest_version=None, production_version=None),
                counter=item.next_version,
                versions={v.version: v for v in versions},
                history=list(item.history),
                placements=placements,
            )
        snapshot = plan.snapshot
        with self._lock:
            org_state = self._orgs.setdefault(snapshot.org, OrgState())
            if not org_state.is_empty():
                return False
            # Into the org's own state: whatever login state it holds stays.
            org_state.by_name = by_name
            org_state.by_id = {state.prompt.prompt_id: state for state in by_name.values()}
            org_state.keys = {key.client_id: key for key in snapshot.api_keys}
            org_state.users = {user.username: user for user in snapshot.users}
            org_state.user_ids = {user.user_id: user.username for user in snapshot.users}
            org_state.environments = {e.name: e for _, e in plan.environments}
            org_state.reviews = {review.review_id: review for _, review in plan.reviews}
            org_state.review_seq = {review.review_id: seq for seq, review in plan.reviews}
            org_state.review_counter = len(plan.reviews)
            org_state.included_by = {}
            for state in by_name.values():
                for version in state.versions.values():
                    org_state.index_includes(version)
            return True
