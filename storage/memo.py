"""A bounded memo for the pure functions of the read path.

Why: decoding a stored version into a PromptVersion, and turning that into the response
body and its ETag, cost more CPU than the rest of a read together (docs/benchmarks.md,
"http"), and give the same result every time for the same input. A memo never serves
stale data: its key is the whole input (every stored field of the version, or the very
PromptVersion object), so any change made by any process (promote, edit, archive) is a
new key and computed afresh. That is what keeps "a promotion takes effect at once" true,
where caching what storage holds would not.

Bounded by entries and by an estimate of the bytes its values hold; when either is
reached, everything is forgotten at once (cheaper than LRU bookkeeping on every hit, and
a working set that fits, which is the normal case, stays). Dict get/set are atomic under
the GIL, so threads share one memo without a lock; two threads may compute the same
entry once each, and the byte count is approximate by at most one entry per thread.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MAX_ENTRIES = 1024
MAX_BYTES = 4 * 1024 * 1024


class Memo(Generic[K, V]):
    """``get`` a remembered value or ``None``; ``put`` one with its size in bytes."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._values: dict[K, V] = {}
        self._bytes = 0

    def get(self, key: K) -> V | None:
        return self._values.get(key)

    def put(self, key: K, value: V, size: int) -> V:
        """Remember ``value`` (unless it alone exceeds the byte bound) and return it."""
        if size > self.max_bytes:
            return value
        if len(self._values) >= self.max_entries or self._bytes + size > self.max_bytes:
            self.clear()
        self._values[key] = value
        self._bytes += size
        return value

    def clear(self) -> None:
        self._values = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._values)
