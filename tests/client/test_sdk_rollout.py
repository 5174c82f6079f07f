"""Rollout assignment against the vectors every SDK shares (tests/vectors/rollout.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptsvc.client.models import PICKS_KEPT, ModelError, PromptVersion, Rollout
from promptsvc.rollout import assign, bucket

VECTORS = json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "rollout.json").read_text("utf-8")
)


def test_the_vectors_are_many_and_mixed() -> None:
    answers = [case["candidate"] for case in VECTORS["cases"]]
    assert len(answers) >= 2000
    assert 0.3 < sum(answers) / len(answers) < 0.7


def test_assign_matches_every_vector() -> None:
    wrong = [
        case
        for case in VECTORS["cases"]
        if assign(case["rollout_id"], case["key"], case["percent"]) is not case["candidate"]
        or bucket(case["rollout_id"], case["key"]) != case["bucket"]
    ]
    assert wrong == []


def test_raising_the_percent_only_moves_keys_to_the_candidate() -> None:
    for sweep in VECTORS["sweeps"]:
        got = [assign(sweep["rollout_id"], sweep["key"], p) for p in range(1, 100)]
        assert got == sweep["candidate"]
        first = sweep["candidate_from"]
        assert got == [first is not None and p >= first for p in range(1, 100)]


# What an environment read answers during a rollout (docs/api.md), v1 the baseline.
BASELINE = {
    "prompt_id": "pmt_1",
    "version_id": "v_1",
    "name": "greeting",
    "version": 1,
    "content": "Hi {{name}}",
    "variables": ["name"],
    "status": "published",
    "is_production": True,
    "prompt_type": "text",
    "metadata": {},
    "tags": [],
    "created_at": "2026-01-02T03:04:05Z",
    "updated_at": "2026-01-02T03:04:05Z",
    "promoted_at": "2026-01-02T03:04:05Z",
    "promoted_by": "u",
    "environments": ["production"],
}
CANDIDATE = {
    **BASELINE,
    "version_id": "v_2",
    "version": 2,
    "content": "Hello {{name}}",
    "status": "draft",
    "is_production": False,
    "promoted_at": None,
    "promoted_by": None,
    "environments": [],
}
ROLLOUT_ID = VECTORS["cases"][0]["rollout_id"]


def during(percent: float, rollout_id: str = ROLLOUT_ID) -> PromptVersion:
    rollout = {"rollout_id": rollout_id, "percent": percent, "candidate": CANDIDATE}
    return PromptVersion.from_json({**BASELINE, "rollout": rollout})


def test_the_rollout_field_gives_both_versions_the_same_rollout() -> None:
    baseline = during(40)
    rollout = baseline.rollout
    assert rollout is not None
    assert (rollout.rollout_id, rollout.percent) == (ROLLOUT_ID, 40)
    assert (baseline.version, rollout.candidate.version) == (1, 2)
    assert rollout.candidate.rollout is rollout
    assert rollout.candidate.content == "Hello {{name}}"
    # The cycle does not reach repr or ==.
    assert "rollout" not in repr(baseline) and "v_2" not in repr(baseline)
    assert during(40) == baseline and during(41) != baseline


def test_a_read_without_a_rollout_has_none() -> None:
    assert PromptVersion.from_json(BASELINE).rollout is None
    assert PromptVersion.from_json({**BASELINE, "rollout": None}).rollout is None


@pytest.mark.parametrize(
    ("rollout", "message"),
    [
        ("ro_1", "field 'rollout' must be"),
        ({"percent": 10, "candidate": CANDIDATE}, "field 'rollout' must be"),
        ({"rollout_id": "ro_1", "percent": "10", "candidate": CANDIDATE}, "percent"),
        ({"rollout_id": "ro_1", "percent": True, "candidate": CANDIDATE}, "percent"),
        ({"rollout_id": "ro_1", "percent": 101, "candidate": CANDIDATE}, "percent"),
        ({"rollout_id": "ro_1", "percent": 10}, "candidate"),
        (
            {"rollout_id": "ro_1", "percent": 10, "candidate": {**CANDIDATE, "version": "2"}},
            "rollout candidate: field 'version'",
        ),
    ],
)
def test_a_bad_rollout_field_is_refused(rollout: object, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        PromptVersion.from_json({**BASELINE, "rollout": rollout})


def test_pick_gives_each_vector_key_its_side() -> None:
    by_percent: dict[tuple[str, int], Rollout] = {}
    wrong = []
    for case in VECTORS["cases"]:
        slot = (case["rollout_id"], case["percent"])
        if slot not in by_percent:
            by_percent[slot] = during(case["percent"], case["rollout_id"]).rollout  # type: ignore[assignment]
        rollout = by_percent[slot]
        baseline = PromptVersion.from_json(BASELINE)
        got = rollout.pick(baseline, case["key"])
        expected = rollout.candidate if case["candidate"] else baseline
        if got is not expected:
            wrong.append(case)
    assert wrong == []


def test_pick_remembers_keys_up_to_a_bound() -> None:
    baseline = during(50)
    rollout = baseline.rollout
    assert rollout is not None
    first = rollout.pick(baseline, "user-0")
    assert rollout.picks == {"user-0": first}
    assert rollout.pick(baseline, "user-0") is first
    for n in range(1, PICKS_KEPT):
        rollout.pick(baseline, f"user-{n}")
    assert len(rollout.picks) == PICKS_KEPT
    rollout.pick(baseline, "one-more")  # the memo starts over rather than grow
    assert list(rollout.picks) == ["one-more"]


def test_a_key_that_is_not_a_string_is_refused() -> None:
    baseline = during(50)
    assert baseline.rollout is not None
    with pytest.raises(ValueError, match="rollout_key must be a string"):
        baseline.rollout.pick(baseline, 42)  # type: ignore[arg-type]
