"""The guard's decision (storage/release/guard.py), without a backend: when the arms'
figures end a rollout, the figures it names, and how close it is."""

from __future__ import annotations

import pytest

from storage.release.guard import breach, closeness
from storage.usage_records import Counts, Guard

ERRORS = Guard("error_rate", 0.05, 20)
SCORE = Guard("score", 0.1, 10)


def arms(baseline: Counts, candidate: Counts) -> dict[str, Counts]:
    return {"baseline": baseline, "candidate": candidate}


def test_an_error_rate_over_the_baselines_by_more_than_the_threshold_ends_it() -> None:
    worse = arms(Counts(ok=95, errors=5), Counts(ok=18, errors=2))
    assert breach(ERRORS, worse) is None  # 0.10 - 0.05 is not more than 0.05
    worse = arms(Counts(ok=95, errors=5), Counts(ok=17, errors=3))
    assert breach(ERRORS, worse) == {
        "metric": "error_rate",
        "threshold": 0.05,
        "baseline": 0.05,
        "candidate": 0.15,
        "samples": 20,
    }


@pytest.mark.parametrize(
    ("baseline", "candidate"),
    [
        (Counts(ok=19), Counts(errors=20)),  # the baseline lacks samples
        (Counts(ok=20), Counts(errors=19)),  # the candidate lacks samples
        (Counts(renders=500), Counts(renders=500)),  # renders are no outcomes
        (Counts(ok=10, errors=10), Counts(ok=20)),  # the candidate is better
    ],
)
def test_no_decision_without_samples_or_a_regression(baseline: Counts, candidate: Counts) -> None:
    assert breach(ERRORS, arms(baseline, candidate)) is None
    assert breach(ERRORS, {"candidate": candidate}) is None


def test_a_mean_score_under_the_baselines_by_more_than_the_threshold_ends_it() -> None:
    base = Counts(ok=10, score_sum=8.0, score_count=10)
    assert breach(SCORE, arms(base, Counts(ok=10, score_sum=7.0, score_count=10))) is None
    found = breach(SCORE, arms(base, Counts(ok=10, score_sum=3.0, score_count=5)))
    assert found is not None
    assert (found["baseline"], found["candidate"], found["samples"]) == (0.8, 0.6, 10)
    # Without scores in an arm there is nothing to compare.
    assert breach(SCORE, arms(Counts(ok=10), Counts(ok=10, score_count=10))) is None


def test_closeness_says_what_is_missing() -> None:
    assert closeness(ERRORS, {}) == {"samples_needed": 20, "worse_by": None}
    near = closeness(ERRORS, arms(Counts(ok=30), Counts(ok=9, errors=1)))
    assert near == {"samples_needed": 10, "worse_by": 0.1}
