"""What a release decision reads of an org's other prompts (storage.release.records
``Neighbours``), through a backend's own reads: for a backend whose decision runs
outside any lock its reads would need (SQL, Redis). Each answer is read once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from promptsvc.templating.includes import Include
from storage.records import PromptVersion

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
            self.prefetch([include], environment)
        return self._resolved[key]

    def prefetch(self, includes: Sequence[Include], environment: str) -> None:
        """Read what ``includes`` resolve to that is not read yet, at once
        (``Storage.read_many``)."""
        wanted = [i for i in dict.fromkeys(includes) if (i, environment) not in self._resolved]
        if not wanted:
            return
        reads = [(i.name, str(i.ref or environment)) for i in wanted]
        for include, found in zip(wanted, self.storage.read_many(self.org, reads), strict=True):
            text = found is not None and found.prompt_type == "text"
            self._resolved[(include, environment)] = found if text else None

    def includers(self, name: str) -> Sequence[PromptVersion]:
        if name not in self._includers:
            self._includers[name] = self.storage.list_includers(self.org, name)
        return self._includers[name]
