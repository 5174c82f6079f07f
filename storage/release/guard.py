"""A rollout's guard (docs/usage.md), decided once for every backend: whether the
arms' figures end the rollout, and the figures its ``rollout.aborted`` carries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.usage_records import Counts, Guard

# Rates and means are floats: 0.8 - 0.7 is 0.10000000000000009, which must not count
# as worse by more than a threshold of 0.1.
TOLERANCE = 1e-9


def breach(guard: Guard, arms: Mapping[str, Counts]) -> dict[str, Any] | None:
    """The guard's figures when they end the rollout, else None.

    Once both arms have at least ``min_samples`` outcomes: the candidate's error rate
    above the baseline's by more than ``threshold``, or its mean score below the
    baseline's by more than ``threshold`` (no score in either arm: no decision).
    """
    samples, base, cand, worse_by = _compare(guard, arms)
    if samples < guard.min_samples or worse_by is None or worse_by <= guard.threshold + TOLERANCE:
        return None
    return {
        "metric": guard.metric,
        "threshold": guard.threshold,
        "baseline": base,
        "candidate": cand,
        "samples": samples,
    }


def closeness(guard: Guard, arms: Mapping[str, Counts]) -> dict[str, Any]:
    """How close the guard is to ending the rollout, for the console: the outcomes the
    arms still need, and by how much the candidate is worse now (None: not known)."""
    samples, _, _, worse_by = _compare(guard, arms)
    return {"samples_needed": max(guard.min_samples - samples, 0), "worse_by": worse_by}


def _compare(
    guard: Guard, arms: Mapping[str, Counts]
) -> tuple[int, float | None, float | None, float | None]:
    """The outcomes of the arm with fewer, the two arms' values of the metric, and by
    how much the candidate's is worse (negative: better; None: a value is missing)."""
    baseline, candidate = arms.get("baseline", Counts()), arms.get("candidate", Counts())
    samples = min(baseline.outcomes, candidate.outcomes)
    if guard.metric == "error_rate":
        base, cand = baseline.error_rate, candidate.error_rate
        worse_by = None if base is None or cand is None else cand - base
    else:
        base, cand = baseline.score_avg, candidate.score_avg
        worse_by = None if base is None or cand is None else base - cand
    return samples, base, cand, worse_by
