"""What the MCP server serves: each prompt with a version in its environment.

The listing costs a request per prompt, so it is kept while the SDK's event stream is
open (``watching``) and forgotten at each change event; with no stream open every call
asks the service, so nothing stale is served while events could be missed. A listing
fetched across a change is not kept (the generation moved while it was fetched).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from promptsvc.client import NotFoundError
from promptsvc.client.management import ServiceClient
from promptsvc.mcp.service import served_version


@dataclass(frozen=True)
class Served:
    """A prompt (the API's Prompt) and the version (PromptVersion) served for it."""

    prompt: dict[str, Any]
    version: dict[str, Any]


class Catalog:
    """The served prompts of ``environment``, read with ``client``; thread-safe.
    ``watcher`` is the client whose event stream tells of changes (``client`` itself
    unless the reads are made as each caller)."""

    def __init__(
        self, client: ServiceClient, environment: str, watcher: ServiceClient | None = None
    ) -> None:
        self.client = client
        self.watcher = watcher or client
        self.environment = environment
        self._lock = threading.Lock()
        self._listing: dict[str, Served] | None = None
        self._generation = 0

    def forget(self) -> None:
        """Something changed: the next call asks the service."""
        with self._lock:
            self._generation += 1
            self._listing = None

    def prompts(self) -> list[Served]:
        """Every served prompt, in the service's order."""
        return list(self._current().values())

    def get(self, name: str) -> Served | None:
        """The served prompt called ``name``, or None."""
        with self._lock:
            listing = self._listing
        if listing is not None:
            return listing.get(name)
        try:
            prompt = self.client.get_prompt(name)
        except NotFoundError:
            return None
        return self._serve(prompt)

    def _current(self) -> dict[str, Served]:
        with self._lock:
            if self._listing is not None:
                return self._listing
            generation = self._generation
        listing: dict[str, Served] = {}
        for prompt in self.client.list_prompts():
            served = self._serve(prompt)
            if served is not None:
                listing[prompt["name"]] = served
        with self._lock:
            if self._generation == generation and self.watcher.watching:
                self._listing = listing
        return listing

    def _serve(self, prompt: dict[str, Any]) -> Served | None:
        version = served_version(self.client, prompt, self.environment)
        return None if version is None else Served(prompt, version)
