"""Rollout assignment against the vectors every SDK shares (tests/vectors/rollout.json)."""

from __future__ import annotations

import json
from pathlib import Path

from promptsvc.client.rollout import assign, bucket

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
