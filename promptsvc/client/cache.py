"""The SDK's cache of resolved prompt versions (docs/api.md section 13).

Keys are ``prompt:<name>:<label or version_id>``; a call with neither label nor version
uses the ``production`` label. Each entry keeps its own expiry and the response's ETag,
so an expired entry can be revalidated with ``If-None-Match`` and still be served when
the service is down (stale-if-error).

Each key is also filed under the prompt reference it was asked with (a name or a
``pmt_`` id), so ``drop`` forgets exactly one prompt's entries (a change event names
both forms); never by key prefix, which would take ``greeting2`` along with ``greeting``.

Reads (``fresh``, ``get``) take no lock: a dict lookup is atomic in CPython and entries
are immutable, replaced whole. Writes take a lock only to pair the write with the
generation check that keeps a fetch begun before a ``clear()``, or before a ``drop`` of
its prompt, from refilling the cache with what it fetched before.

``mark()`` is the watch's starting point (``watch=True``): what was cached before it
may predate a change whose event the stream will not replay, so it is handed back to
be checked (and kept, and served, meanwhile); an answer to a fetch begun before it is
stored expired, and ``put`` says it must be asked for again.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from promptsvc.client.models import PromptVersion

LABELS = frozenset({"production", "latest"})

Clock = Callable[[], float]

# How many recent drops a put can be checked against; a fetch that began before the
# oldest of them is not stored (it may predate a drop of its prompt).
DROPS_KEPT = 256


def cache_key(name: str, label: str | None, version: str | int | None) -> str:
    """The cache key of a call; raises ValueError when both label and version are given.

    An unknown label still gives a key (it is never stored, so it always misses and the
    miss path rejects it): this function runs on every cache hit and stays small.
    """
    if version is None:
        return f"prompt:{name}:{'production' if label is None else label}"
    if label is not None:
        raise ValueError("pass either label or version, not both")
    if version in LABELS:
        raise ValueError(f"{version!r} is a label: pass label={version!r}")
    return f"prompt:{name}:{version}"


@dataclass(frozen=True, slots=True)
class CacheEntry:
    version: PromptVersion
    etag: str | None
    expires_at: float  # on the cache's clock
    prompt: str = ""  # the prompt reference it was asked with
    path: str = ""  # the API path that answered it

    def is_expired(self, now: float) -> bool:
        return now >= self.expires_at


class PromptCache:
    """Thread-safe TTL cache. ``ttl`` <= 0 stores nothing (caching off).

    ``clock`` is the seam tests move: a monotonic seconds counter, read on every hit.
    """

    def __init__(self, ttl: float, clock: Clock = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        # Told of each entry stored by put (after the lock): the on-disk snapshot.
        self.on_put: Callable[[str, CacheEntry], None] | None = None
        self._entries: dict[str, CacheEntry] = {}
        self._keys: dict[str, set[str]] = {}  # prompt reference -> its keys
        self._generation = 0  # moved by every clear() and drop()
        self._cleared = 0  # the generation the last clear() made
        self._marked = 0  # the generation the last mark() made
        self._drops: deque[tuple[int, frozenset[str]]] = deque(maxlen=DROPS_KEPT)
        self._lock = threading.Lock()

    def fresh(self, key: str) -> PromptVersion | None:
        """The cached version if present and unexpired; the hot path, so no lock."""
        entry = self._entries.get(key)
        if entry is not None and entry.expires_at > self.clock():
            return entry.version
        return None

    def get(self, key: str) -> CacheEntry | None:
        """The entry, expired or not (for revalidation and stale-if-error)."""
        return self._entries.get(key)

    @property
    def generation(self) -> int:
        """Read before a fetch and hand to ``put``: a ``clear()`` in between, or a
        ``drop`` of the fetched prompt, wins."""
        return self._generation

    def put(
        self,
        key: str,
        prompt: str,
        version: PromptVersion,
        etag: str | None,
        generation: int,
        *,
        path: str,
    ) -> bool:
        """Store (or renew) an entry for ``ttl`` seconds from now, filed under ``prompt``
        (the name or id it was asked with) and the prompts ``version`` includes, unless
        a clear or a drop of any of them came after ``generation``. False when a
        ``mark()`` came after it: the entry is stored expired (for stale-if-error) and
        ``path`` is to be asked again."""
        if self.ttl <= 0:
            return True
        now = self.clock()
        entry = CacheEntry(version, etag, now + self.ttl, prompt, path)
        # Filed under the prompts it includes too: an event about one drops it.
        refs = (prompt, *version.included_prompts)
        with self._lock:
            if generation != self._generation and not all(
                self._untouched(ref, generation) for ref in refs
            ):
                return True
            confirmed = generation >= self._marked
            self._entries[key] = entry if confirmed else replace(entry, expires_at=now)
            for ref in refs:
                self._keys.setdefault(ref, set()).add(key)
        if self.on_put is not None:
            self.on_put(key, entry)
        return confirmed

    def put_stale(
        self, key: str, prompt: str, version: PromptVersion, path: str, ttl: float
    ) -> None:
        """Store a version the service has not confirmed (read from the snapshot, or
        served stale again) for ``ttl`` seconds, without an ETag: once it expires the
        next call asks the service for a fresh answer."""
        if self.ttl <= 0:
            return
        entry = CacheEntry(version, None, self.clock() + ttl, prompt, path)
        with self._lock:
            self._entries[key] = entry
            self._keys.setdefault(prompt, set()).add(key)

    def mark(self) -> dict[str, CacheEntry]:
        """The watch's starting point: the entries cached before it, to be checked."""
        with self._lock:
            self._generation += 1
            self._marked = self._generation
            self._drops.append((self._generation, frozenset()))  # so drops stay contiguous
            return dict(self._entries)

    def expire(self, key: str, entry: CacheEntry) -> None:
        """Make ``entry`` expired (kept for stale-if-error) if it is still ``key``'s."""
        with self._lock:
            if self._entries.get(key) is entry:
                self._entries[key] = replace(entry, expires_at=self.clock())

    def _untouched(self, prompt: str, generation: int) -> bool:
        """Whether neither a clear nor a drop of ``prompt`` came after ``generation``
        (False when the drops since then are no longer all kept)."""
        if generation < self._cleared:
            return False
        if not self._drops or self._drops[0][0] > generation + 1:
            return False
        return not any(prompt in refs for gen, refs in self._drops if gen > generation)

    def drop(self, prompts: Iterable[str]) -> None:
        """Forget every entry filed under any of ``prompts`` (names or ``pmt_`` ids)."""
        refs = frozenset(prompts)
        with self._lock:
            self._generation += 1
            self._drops.append((self._generation, refs))
            for ref in refs:
                for key in self._keys.pop(ref, ()):
                    self._entries.pop(key, None)

    def clear(self) -> None:
        """Drop every entry at once: readers see the old dict or an empty one."""
        with self._lock:
            self._generation += 1
            self._cleared = self._generation
            self._drops.clear()
            self._entries = {}
            self._keys = {}

    def __len__(self) -> int:
        return len(self._entries)
