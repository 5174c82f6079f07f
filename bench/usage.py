"""Usage benchmark: ``python -m bench.usage [--rounds N]``.

Measures the server time of ``POST /api/v1/usage`` with 500 items (the most one report
may hold) on SQLite, the default storage, in a file of its own: each item a key of its
own (50 versions, 5 environments, two of them in a guarded rollout's arms), so every
report adds to 1,000 bucket rows and checks the guard. Requests go through Flask's test
client, in-process, so the time is the server's alone: token check, validation of the
500 items, the one transaction that adds them, the guard check. Reference, measured in
the same run and the same way: ``GET /api/v1/prompts/{name}/production``.

Target: under 50 ms (median). Prints a table and writes the "usage" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from bench.report import table, write_section
from identity.roles import SERVICE_ADMIN
from promptsvc.app import create_app
from promptsvc.config import Settings
from storage.sql.storage import SqlStorage

ORG = "acme"
VERSIONS = 50
ENVIRONMENTS = ("production", "staging", "qa", "dev", None)
TARGET_MS = 50.0
COMMAND = "python -m bench.usage"


def report_items(prompt_id: str, rollout_id: str) -> list[dict[str, Any]]:
    items = []
    for version in range(1, VERSIONS + 1):
        for environment in ENVIRONMENTS:
            for k in range(2):
                arm = (None, "baseline", "candidate")[version % 3] if k == 0 else None
                items.append(
                    {
                        "prompt_id": prompt_id,
                        "version": version if arm != "candidate" else 2,
                        "environment": environment if k == 0 else None,
                        "rollout_id": rollout_id if arm else None,
                        "arm": arm,
                        "renders": 10 + k,
                        "ok": 9,
                        "errors": 1,
                        "score_sum": 4.5,
                        "score_count": 5,
                    }
                )
    return items[:500]


def timed(client: FlaskClient, rounds: int, method: str, path: str, **kwargs: Any) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        r = client.open(path, method=method, **kwargs)
        samples.append((time.perf_counter() - start) * 1000)
        assert r.status_code < 300, r.json
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = SqlStorage.from_url(f"sqlite:///{Path(directory) / 'bench.db'}")
        app = create_app(Settings(issuer_url="http://localhost"), storage=store)
        identity = app.extensions["identity"]
        key, secret = identity.create_key(ORG, SERVICE_ADMIN)
        token = identity.issue_token(ORG, key.client_id, secret)["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        client = app.test_client()
        prompt = store.create_prompt(ORG, "greeting")
        for i in range(VERSIONS):
            store.create_version(ORG, "greeting", f"v{i} {{{{name}}}}", "bench")
        store.promote(ORG, "greeting", "1", "bench")
        begun = client.post(
            "/api/v1/prompts/greeting/versions/2/promote",
            headers=headers,
            json={
                "rollout_percent": 10,
                # Never met: every report checks it, none ends the rollout.
                "rollout_guard": {"metric": "error_rate", "threshold": 1, "min_samples": 10},
            },
        )
        assert begun.status_code == 201, begun.json
        body = {"items": report_items(prompt.prompt_id, begun.json["rollout_id"])}
        assert len(body["items"]) == 500
        read = ("GET", "/api/v1/prompts/greeting/production")
        warm = max(args.rounds // 10, 3)
        timed(client, warm, "POST", "/api/v1/usage", headers=headers, json=body)
        timed(client, warm, *read, headers=headers)
        posts = timed(client, args.rounds, "POST", "/api/v1/usage", headers=headers, json=body)
        reads = timed(client, args.rounds, *read, headers=headers)
        store.close()
    rows = []
    for name, samples in (("POST /api/v1/usage, 500 items", posts), ("GET production", reads)):
        ordered = sorted(samples)
        p95 = ordered[int(len(ordered) * 0.95) - 1]
        rows.append([name, f"{statistics.median(samples):.1f}", f"{p95:.1f}"])
    median = statistics.median(posts)
    ratio = median / statistics.median(reads)
    verdict = "met" if median < TARGET_MS else "NOT met"
    text = table(["request (SQLite)", "median ms", "p95 ms"], rows)
    summary = (
        f"A report of 500 items costs {ratio:.1f} reads of production (medians, same run). "
        f"Target: under {TARGET_MS:.0f} ms server time (median); this run: "
        f"{median:.1f} ms, target {verdict}."
    )
    print(text)
    print(summary)
    write_section(
        "usage",
        "Usage reports: POST /api/v1/usage of 500 items (SQLite)",
        COMMAND,
        f"""Server time of one report of 500 items, each a key of its own (50 versions,
5 environments, some in a guarded rollout's arms: 1,000 bucket rows added to, one
guard checked), {args.rounds} requests after a warm-up, through Flask's test client
(in-process: token check, validation, one SQLite transaction, the guard check; no
network). Reference: GET production through the same client, same run.

{text}

{summary}
""",
    )


if __name__ == "__main__":
    main()
