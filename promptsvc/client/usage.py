"""Usage counting (docs/usage.md): renders and outcomes per key, kept in memory and
sent in batches to ``POST /api/v1/usage``.

A key is ``(prompt_id, version, environment, rollout_id, arm)``. The client that fetched
a version tags it (:func:`tag`) with its key and the dict its renders go to, so a
render costs one ``renders[key] += 1`` on a defaultdict and no lock: that statement
runs without a switch of thread under the GIL, and the sender takes each key's count
with one ``pop``, so no render is lost between the two. Outcomes (one per model call,
not per hit) take a lock.

What a send does not deliver is given back and sent with the next; at most
:data:`MAX_KEYS` keys are kept, the oldest going first, with a warning.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from promptsvc.client import tracing
from promptsvc.client.errors import error_for_response
from promptsvc.client.flow import Flow
from promptsvc.client.models import PromptVersion

logger = logging.getLogger("promptsvc.client")

UsageKey = tuple[str, int, str | None, str | None, str | None]
"""``(prompt_id, version, environment, rollout_id, arm)``."""

USAGE_PATH = "/api/v1/usage"
# Keys kept while sends fail; beyond this the oldest go.
MAX_KEYS = 10_000
# Items in one POST (the service takes no more).
MAX_ITEMS = 500


@dataclass(slots=True)
class Tally:
    """What one key counted since its last delivered send."""

    renders: int = 0
    ok: int = 0
    errors: int = 0
    score_sum: float = 0.0
    score_count: int = 0

    def add(self, other: Tally) -> None:
        self.renders += other.renders
        self.ok += other.ok
        self.errors += other.errors
        self.score_sum += other.score_sum
        self.score_count += other.score_count

    def item(self, key: UsageKey) -> dict[str, Any]:
        """The ``POST /api/v1/usage`` item of this key."""
        prompt_id, version, environment, rollout_id, arm = key
        return {
            "prompt_id": prompt_id,
            "version": version,
            "environment": environment,
            "rollout_id": rollout_id,
            "arm": arm,
            "renders": self.renders,
            "ok": self.ok,
            "errors": self.errors,
            "score_sum": self.score_sum,
            "score_count": self.score_count,
        }


class UsageCounter:
    """One client's counts: ``renders`` (written by ``render()`` without a lock), the
    outcomes, and what earlier sends did not deliver."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.renders: defaultdict[UsageKey, int] = defaultdict(int)
        self.max_keys = max_keys
        self._outcomes: dict[UsageKey, Tally] = {}
        self._kept: dict[UsageKey, Tally] = {}  # undelivered, oldest first
        self._lock = threading.Lock()

    def record(self, key: UsageKey, ok: bool, score: float | None) -> None:
        """Count one outcome of ``key``: ok or an error, and its score when given."""
        with self._lock:
            tally = self._outcomes.get(key)
            if tally is None:
                tally = self._outcomes[key] = Tally()
            if ok:
                tally.ok += 1
            else:
                tally.errors += 1
            if score is not None:
                tally.score_sum += score
                tally.score_count += 1

    def take(self) -> dict[UsageKey, Tally]:
        """Everything counted and not delivered, oldest first; the caller sends it and
        gives back (:meth:`give_back`) what it could not deliver."""
        renders = self.renders
        with self._lock:
            taken, self._kept = self._kept, {}
            outcomes, self._outcomes = self._outcomes, {}
            for key in list(renders):
                # pop: a render counted after this line starts the key again.
                taken.setdefault(key, Tally()).renders += renders.pop(key, 0)
            for key, tally in outcomes.items():
                taken.setdefault(key, Tally()).add(tally)
            return self._bounded(taken)

    def give_back(self, unsent: dict[UsageKey, Tally]) -> None:
        """Keep ``unsent`` for the next send, ahead of what was kept since (older)."""
        if not unsent:
            return
        with self._lock:
            merged = dict(unsent)
            for key, tally in self._kept.items():
                if key in merged:
                    merged[key].add(tally)
                else:
                    merged[key] = tally
            self._kept = self._bounded(merged)

    def _bounded(self, tallies: dict[UsageKey, Tally]) -> dict[UsageKey, Tally]:
        excess = len(tallies) - self.max_keys
        if excess <= 0:
            return tallies
        logger.warning(
            "usage: %d keys are waiting to be sent, more than %d: dropping the %d oldest",
            len(tallies),
            self.max_keys,
            excess,
        )
        return dict(list(tallies.items())[excess:])


def read_environment(path: str) -> str | None:
    """The environment an SDK read path names (``/api/v1/prompts/{name}/...``):
    ``production``, the name after ``environments/``, or None (``latest``, a version)."""
    rest = path.split("/")[5:]
    if rest == ["production"]:
        return "production"
    if len(rest) == 2 and rest[0] == "environments":
        return rest[1]
    return None


def tag(version: PromptVersion, environment: str | None, counter: UsageCounter | None) -> None:
    """Give ``version`` (and its rollout's candidate) the key its renders count under,
    in ``counter`` (None: not counted), and its span attributes (docs/usage.md)."""
    if version.is_fallback or not version.prompt_id:
        return
    rollout = version.rollout
    if rollout is None:
        sides: list[tuple[PromptVersion, str | None, str | None]] = [(version, None, None)]
    else:
        sides = [
            (version, rollout.rollout_id, "baseline"),
            (rollout.candidate, rollout.rollout_id, "candidate"),
        ]
    for side, rollout_id, arm in sides:
        key: UsageKey = (side.prompt_id, side.version, environment, rollout_id, arm)
        object.__setattr__(side, "_usage_key", key)
        object.__setattr__(side, "_tally", None if counter is None else counter.renders)
        attributes = tracing.span_attributes(
            side.name, side.version, side.version_id, environment, rollout_id, arm
        )
        object.__setattr__(side, "_span_attributes", attributes)


def report_flow(
    counter: UsageCounter, post: Callable[[object], Flow[httpx.Response]]
) -> Flow[None]:
    """Send what ``counter`` holds, :data:`MAX_ITEMS` items per ``post(body)``; what
    was not delivered is given back for the next send.

    A transport error or 5xx (raised) or a 429 keeps the rest; another 4xx cannot be
    cured by sending again, so that batch is dropped with a warning.
    """
    unsent = counter.take()
    try:
        while unsent:
            keys = list(unsent)[:MAX_ITEMS]
            items = [unsent[key].item(key) for key in keys]
            response = yield from post({"items": items})
            if response.status_code == 429:
                raise error_for_response(response)
            if response.status_code >= 300:
                logger.warning(
                    "usage: dropping %d items the service refused: %s",
                    len(items),
                    error_for_response(response),
                )
            for key in keys:
                del unsent[key]
    finally:
        counter.give_back(unsent)
