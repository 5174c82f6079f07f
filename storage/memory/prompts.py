"""Prompts, versions and promotions in memory."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

from storage import release
from storage.drafts import NewVersions, numbered
from storage.errors import PromptExists, VersionNotFound
from storage.event_records import created_event
from storage.interface import PromptStore
from storage.memory.promotion import MemoryNeighbours, MemoryPromotion
from storage.memory.state import OrgState, PromptState
from storage.records import PRODUCTION, PromotionRecord, Prompt, PromptVersion


class MemoryPrompts(NewVersions, MemoryPromotion, PromptStore):
    """Prompts, versions and promotions; the release rules by storage/release."""

    # -- prompts

    def _add_prompt(
        self, org: str, prompt: Prompt, actor: str | None, request_id: str | None
    ) -> Prompt:
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            if prompt.name in org_state.by_name:
                raise PromptExists(prompt.name)
            state = PromptState(prompt)
            org_state.by_name[prompt.name] = state
            org_state.by_id[prompt.prompt_id] = state
            self._append(org_state, created_event(prompt, actor, request_id))
            return prompt

    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        with self._lock:
            return self._prompt(self._state(org, prompt_ref))

    def _prompts_after(self, org: str, after: str, count: int) -> list[Prompt]:
        with self._lock:
            org_state = self._orgs.get(org) or OrgState()
            names = sorted(n for n in org_state.by_name if n > after)[:count]
            return [self._prompt(org_state.by_name[n]) for n in names]

    def list_includers(self, org: str, name: str) -> list[PromptVersion]:
        with self._lock:
            org_state = self._orgs.get(org)
            found = [] if org_state is None else list(MemoryNeighbours(org_state).includers(name))
        return sorted(found, key=lambda v: (v.name, v.version))

    # -- versions

    def _add_version(
        self, org: str, prompt_ref: str, draft: PromptVersion, request_id: str | None
    ) -> PromptVersion:
        with self._lock:
            state = self._state(org, prompt_ref)
            state.counter += 1
            prompt = state.prompt
            version = numbered(
                draft, state.counter, prompt.prompt_id, prompt.name, prompt.prompt_type
            )
            release.check_included_present(version, self._orgs[org].holds)
            state.versions[version.version] = version
            self._orgs[org].index_includes(version)
            state.prompt = replace(state.prompt, updated_at=draft.created_at)
            self._append(self._orgs[org], created_event(version, draft.created_by, request_id))
            return version

    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        with self._lock:
            state = self._state(org, prompt_ref)
            return state.versions[self._number(state, prompt_ref, version_ref)]

    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        with self._lock:
            state = self._state(org, prompt_ref)
            if not state.versions:
                raise VersionNotFound(prompt_ref, "latest")
            return state.versions[next(reversed(state.versions))]

    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        with self._lock:
            return self._held(org, prompt_ref, PRODUCTION)[1]

    def _versions_below(
        self, org: str, prompt_ref: str, status: str | None, before: int | None, count: int
    ) -> list[PromptVersion]:
        with self._lock:
            versions = self._state(org, prompt_ref).versions
            wanted = (
                versions[number]
                for number in reversed(versions)
                if (before is None or number < before) and status in (None, versions[number].status)
            )
            return list(islice(wanted, count))

    def _history_below(
        self, org: str, prompt_ref: str, before: int | None, count: int
    ) -> list[tuple[int, PromotionRecord]]:
        with self._lock:
            history = self._state(org, prompt_ref).history
            end = len(history) if before is None else min(before - 1, len(history))
            start = max(end - count, 0)
            return [(n, history[n - 1]) for n in range(end, start, -1)]
