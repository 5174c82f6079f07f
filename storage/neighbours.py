"""What a release decision reads of an org's other prompts (storage.release.records
``Neighbours``), through a backend's own reads: for a backend whose decision runs
outside any lock its reads would need (SQL, Redis). Each answer is read once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from promptsvc.templating.includes import Include
from storage.records import IncludeReads, PromptVersion

if TYPE_CHECKING:
    from storage.interface import Storage


class StoredNeighbours:
    """``storage``'s other prompts of ``org``, read when asked."""

    def __init__(
        self,
        storage: Storage,
        org: str,
        read: IncludeReads | None = None,
        includers: dict[str, Sequence[PromptVersion]] | None = None,
    ) -> None:
        """``read``: what includes resolve to, already read (by (name, where));
        ``includers``: the includers of prompts, already read (by name)."""
        self.storage = storage
        self.org = org
        self._read = read or {}
        self._resolved: dict[tuple[Include, str], PromptVersion | None] = {}
        self._includers = dict(includers or {})

    def resolve(self, include: Include, environment: str) -> PromptVersion | None:
        key = (include, environment)
        if key not in self._resolved:
            self.prefetch([include], environment)
        return self._resolved[key]

    def prefetch(self, includes: Sequence[Include], environment: str) -> None:
        """Read what ``includes`` resolve to that is not read yet (nor given), at
        once (``Storage.read_many``)."""
        wanted = [i for i in dict.fromkeys(includes) if (i, environment) not in self._resolved]
        if not wanted:
            return
        reads = [(i.name, str(i.ref or environment)) for i in wanted]
        missing = [where for where in reads if where not in self._read]
        found = dict(
            zip(missing, self.storage.read_many(self.org, missing) if missing else [], strict=True)
        )
        for include, where in zip(wanted, reads, strict=True):
            version = self._read[where] if where in self._read else found[where]
            text = version is not None and version.prompt_type == "text"
            self._resolved[(include, environment)] = version if text else None

    def includers(self, name: str) -> Sequence[PromptVersion]:
        if name not in self._includers:
            self._includers[name] = self.storage.list_includers(self.org, name)
        return self._includers[name]
