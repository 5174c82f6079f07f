"""Sticky rollout assignment, the same in the service and every SDK: the API answers
``?rollout_key=`` reads with it and the Python SDK picks a side with it (standard
library only, so the SDK-only install has it).

A caller with key K gets the candidate of rollout R at percent P when the first 8 bytes
of sha256(f"{R}:{K}"), read big-endian, modulo 10,000, are below P * 100: a key keeps
its side while the rollout lasts, and raising the percent only moves keys from the
baseline to the candidate. ``tests/vectors/rollout.json`` holds the answers every SDK's
tests check.
"""

from __future__ import annotations

import hashlib


def bucket(rollout_id: str, key: str) -> int:
    """The key's bucket in the rollout, 0-9,999."""
    digest = hashlib.sha256(f"{rollout_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10000


def assign(rollout_id: str, key: str, percent: float) -> bool:
    """Whether ``key`` gets the candidate of rollout ``rollout_id`` at ``percent`` (0-100)."""
    return bucket(rollout_id, key) < percent * 100


# The console's and the command line's suggested ladder; 100 means "complete it".
STEPS = (5, 25, 50, 100)


def next_step(percent: float) -> int:
    """The first step of :data:`STEPS` above ``percent`` (100: time to complete)."""
    return next(step for step in STEPS if step > percent) if percent < 100 else 100
