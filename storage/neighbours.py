"""What a release decision reads of an org's other prompts (storage.release.records
``Neighbours``), through a backend's own reads: for a backend whose decision runs
outside any lock its reads would need (SQL, Redis). Each answer is read once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from promptsvc.templating.includes import Include
from storage.errors import NotFound
from storage.records import PRODUCTION, PromptVersion

if TYPE_CHECKING:
    from storage.interface import Storage


class StoredNeighbours:
    """``storage``'s other prompts of ``org``, read when asked."""

    def __init__(self, storage: Storage, org: str) -> None:
        self.storage = storage
        self.org = org
        self._resolved: dict[tuple[Include, str], PromptVersion | None] = {}
        self._includers: dict[str, Sequence[PromptVersion]] = {}

    def resolve(self, include: Include, environment: str) -> PromptVersion | None:
        key = (include, environment)
        if key not in self._resolved:
            self._resolved[key] = self._read(include, environment)
        return self._resolved[key]

    def _read(self, include: Include, environment: str) -> PromptVersion | None:
        try:
            if isinstance(include.ref, int):
                found = self.storage.get_version(self.org, include.name, str(include.ref))
            elif (include.ref or environment) == PRODUCTION:
                found = self.storage.get_production(self.org, include.name)
            else:
                where = include.ref or environment
                found = self.storage.get_in_environment(self.org, include.name, where)
        except NotFound:
            return None
        return found if found.prompt_type == "text" else None

    def includers(self, name: str) -> Sequence[PromptVersion]:
        if name not in self._includers:
            self._includers[name] = self.storage.list_includers(self.org, name)
        return self._includers[name]
