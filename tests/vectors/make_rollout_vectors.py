"""Write tests/vectors/rollout.json: rollout assignments every SDK's tests check.

The formula (docs/typescript.md, "Rollouts"): a caller with key K gets the candidate of
rollout R at percent P when the first 8 bytes of sha256(f"{R}:{K}") read big-endian,
modulo 10,000, are below P * 100. Computed here with hashlib alone, so the file is an
oracle independent of either SDK's code. ``python -m tests.vectors.make_rollout_vectors``
rewrites it; the output is the same on every run.

``cases``: rollout ids x keys x a few percents. ``sweeps``: for some (rollout id, key)
pairs, the answer at every percent 1-99, which is monotonic: once a key gets the
candidate, it keeps it at every higher percent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "rollout.json"
PERCENTS = (1, 10, 25, 50, 75, 99)
SPECIAL_KEYS = ("", "user:with:colons", "ünïcödé", "emoji-\U0001f680", "x" * 100, " spaced ")


def bucket(rollout_id: str, key: str) -> int:
    digest = hashlib.sha256(f"{rollout_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10000


def rollout_ids() -> list[str]:
    return [f"ro_{hashlib.sha256(str(i).encode()).hexdigest()[:20]}" for i in range(20)]


def keys() -> list[str]:
    return [f"user-{i}" for i in range(19)] + list(SPECIAL_KEYS)


def vectors() -> dict[str, object]:
    cases = [
        {
            "rollout_id": rollout_id,
            "key": key,
            "percent": percent,
            "bucket": bucket(rollout_id, key),
            "candidate": bucket(rollout_id, key) < percent * 100,
        }
        for rollout_id in rollout_ids()
        for key in keys()
        for percent in PERCENTS
    ]
    sweeps = [
        {
            "rollout_id": rollout_id,
            "key": key,
            "candidate_from": next(
                (p for p in range(1, 100) if bucket(rollout_id, key) < p * 100), None
            ),
            "candidate": [bucket(rollout_id, key) < p * 100 for p in range(1, 100)],
        }
        for rollout_id in rollout_ids()[:4]
        for key in keys()[:10]
    ]
    return {
        "formula": 'int.from_bytes(sha256(f"{rollout_id}:{key}".encode()).digest()[:8], "big")'
        " % 10000 < percent * 100",
        "cases": cases,
        "sweeps": sweeps,
    }


def dump(data: dict[str, object]) -> str:
    """JSON with one case per line: small, and a diff shows which cases changed."""
    lines = ["{"]
    for i, (name, value) in enumerate(data.items()):
        end = "," if i < len(data) - 1 else ""
        if isinstance(value, list):
            items = [json.dumps(item, ensure_ascii=False) for item in value]
            lines.append(f"  {json.dumps(name)}: [\n    " + ",\n    ".join(items) + f"\n  ]{end}")
        else:
            lines.append(f"  {json.dumps(name)}: {json.dumps(value, ensure_ascii=False)}{end}")
    return "\n".join([*lines, "}"]) + "\n"


def main() -> None:
    OUT.write_text(dump(vectors()), encoding="utf-8")


if __name__ == "__main__":
    main()
