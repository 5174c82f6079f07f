"""The reliability campaign in one command; writes docs/reliability.md.

    python -m bench.reliability            # the long runs + the suite (below)
    python -m bench.reliability --quick    # shorter long runs (development)
    python -m bench.reliability --quick --only sql   # some long runs only; prints them,
                                                     # leaves docs/reliability.md alone

Two parts, every row of the report coming from this run:

1. Long runs (the suite's tests, bigger): schemathesis with many examples per batch and
   a fresh seed on memory:// and on a Redis of our own; gunicorn (2 workers) on Redis
   with client processes contending for one prompt for 30 s; a 10 s Redis outage under
   writes; 15 s of promotions while Redis connections are killed every 5 ms. On SQL
   (bench/sql_faults.py): gunicorn (2 workers) on SQLite and on PostgreSQL under writes,
   the whole server SIGKILLed again and again, then one worker at a time; a PostgreSQL
   of our own stopped and started under writes; SQLite files that promptsvc must refuse
   to start on. PostgreSQL rows use a server of their own (bench/sqldb.py), never the
   machine's.
2. ``pytest`` on tests/reliability and the SQL backend's fault and refusal tests
   (SQL_TESTS) with ``--junitxml``: each test's ``report`` properties (what it tried,
   what it saw) and its outcome become one row. The suite's real-Redis tests use
   PROMPTSVC_TEST_REDIS_URL (default redis://127.0.0.1:6379/15, flushed), its
   PostgreSQL tests PROMPTSVC_TEST_POSTGRES_URL (tests/sql_support.py).

A test marked xfail (a known bug waiting for its fix) is listed as FAILING with its
reason; nothing is reported as passing that did not pass.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from bench.report import machine

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "reliability"
DOC = ROOT / "docs" / "reliability.md"
# The page's one part written by hand: the attacks of issues 29 and 30 and their tests.
ATTACKS = ROOT / "bench" / "reliability_attacks.md"

GROUPS = {"fuzz", "redis", "sql"}  # the long runs, for --only

AREAS = {
    "test_fuzz": "Fuzzing",
    "test_concurrency": "Concurrency",
    "test_faults": "Faults",
    "test_forgery": "Token forgery",
    "test_rate_limits": "Brute force",
    "test_bad_inputs": "Hostile input",
    "test_log_secrets": "Secrets in logs",
    "test_attacks": "Attacks (issue 19)",
    "test_attacks30": "Attacks (issue 30)",
    "test_sql_durability": "Faults (SQL)",
    "test_e2e_sql": "Faults (SQL)",
    "test_sql_schema": "Hostile input (SQL)",
}
# The SQL backend's own fault and refusal tests, run with the suite (not duplicated here).
SQL_TESTS = [
    "tests/sql/test_sql_durability.py",
    "tests/e2e/test_e2e_sql.py",
    *(
        f"tests/sql/test_sql_schema.py::{name}"
        for name in (
            "test_a_database_that_cannot_be_used_is_refused_in_one_line",
            "test_a_sqlite_url_without_a_file_is_refused",
        )
    ),
]


@dataclass
class Row:
    area: str
    test: str
    tried: str
    result: str
    outcome: str


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(rows: list[Row]) -> str:
    lines = ["| Area | Test | Load or input | Result | Outcome |", "|---|---|---|---|---|"]
    lines += [
        f"| {r.area} | {_cell(r.test)} | {_cell(r.tried)} | {_cell(r.result)} | {r.outcome} |"
        for r in rows
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------- long runs


def _timed(name: str, run: Callable[[], Row | list[Row]]) -> list[Row]:
    print(f"[reliability] {name} ...", flush=True)
    started = time.monotonic()
    try:
        made = run()
        rows = made if isinstance(made, list) else [made]
    except Exception as exc:  # a crashed run is a failed row, not a missing one
        rows = [Row("?", name, "", f"crashed: {exc!r}", "FAILED")]
    outcomes = ", ".join(row.outcome for row in rows)
    print(f"[reliability] {name}: {outcomes} in {time.monotonic() - started:.0f} s", flush=True)
    return rows


def fuzz_row(backend: str, examples: int, seed: int) -> Row:
    # The token limits promptsvc.config reads.
    PER_CLIENT_ENV, PER_IP_ENV = "PROMPTSVC_TOKEN_RATE_LIMIT", "PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP"
    from tests.reliability.rel_fuzz import Tokens, fuzz
    from tests.reliability.rel_support import RedisServer, make_app, new_key, token_for
    from tests.servers import LiveServer

    os.environ[PER_CLIENT_ENV] = os.environ[PER_IP_ENV] = "off"  # limits: own tests
    redis_server = RedisServer(fsync="everysec") if backend == "redis" else None
    try:
        url = redis_server.start().url(0) if redis_server else "memory://"
        app = make_app(url)
        tokens = Tokens(
            "fuzz",
            write=token_for(app, new_key(app, "fuzz", "Service Write")),
            admin=token_for(app, new_key(app, "fuzz", "Service Admin")),
        )
        with LiveServer(app) as server:
            result = fuzz(
                server.base_url,
                tokens,
                backend=backend,
                examples=examples,
                seed=seed,
                budget_seconds=1800,
            )
    finally:
        del os.environ[PER_CLIENT_ENV], os.environ[PER_IP_ENV]
        if redis_server:
            redis_server.cleanup()
    failures = result.distinct_failures()
    verdict = "passed" if not failures and not result.unfinished else "FAILED"
    detail = result.summary()
    if failures:
        detail += ". " + " / ".join(
            f"{f.operation} -> {f.status}: {f.message[:200]}" for f in failures[:5]
        )
    return Row(
        "Fuzzing",
        f"schemathesis, {backend} (long)",
        f"every operation of /openapi.json, positive and negative data, any and existing "
        f"resources, {examples} examples per batch, seed {seed}",
        detail,
        verdict,
    )


def load_row(seconds: float, processes: int, workers: int) -> Row:
    from tests.reliability.rel_load import load_test
    from tests.reliability.rel_support import RedisServer

    with tempfile.TemporaryDirectory() as directory, RedisServer(fsync="everysec") as redis_server:
        result = load_test(
            redis_server.url(0),
            Path(directory),
            workers=workers,
            processes=processes,
            seconds=seconds,
            seed=random.randrange(1 << 30),
        )
    detail = result.summary()
    if result.problems:
        detail += ": " + "; ".join(result.problems[:5])
    return Row(
        "Concurrency",
        f"gunicorn + Redis, {seconds:.0f} s (long)",
        f"gunicorn {workers} workers x 4 threads on Redis; {processes} client processes "
        f"creating, promoting and reading one prompt for {seconds:.0f} s",
        detail,
        "passed" if not result.problems else "FAILED",
    )


def outage_row(down_seconds: float) -> Row:
    from tests.reliability.rel_faults import outage

    with tempfile.TemporaryDirectory() as directory:
        result = outage(Path(directory), down_seconds=down_seconds)
    detail = result.summary()
    if result.problems:
        detail += ": " + "; ".join(result.problems[:5])
    return Row(
        "Faults",
        f"Redis outage, {down_seconds:.0f} s (long)",
        f"gunicorn (2 workers) on a Redis of its own under writes; Redis SIGKILLed for "
        f"{down_seconds:.0f} s, 11 endpoints probed meanwhile, then restarted on its "
        "append-only file",
        detail,
        "passed" if not result.problems else "FAILED",
    )


def drop_row(seconds: float, kill_every: float) -> Row:
    from tests.reliability.rel_faults import dropped_connections

    result = dropped_connections(seconds=seconds, kill_every=kill_every)
    assert result.load is not None
    detail = result.summary()
    if result.load.problems:
        detail += ": " + "; ".join(result.load.problems[:5])
    return Row(
        "Faults",
        f"dropped Redis connections, {seconds:.0f} s (long)",
        f"4 threads creating and promoting one prompt; the app's Redis connections killed "
        f"every {kill_every * 1000:.0f} ms",
        detail,
        "passed" if not result.load.problems else "FAILED",
    )


def _verdict(problems: list[str]) -> str:
    return "passed" if not problems else "FAILED"


def _with_problems(summary: str, problems: list[str]) -> str:
    return summary + (": " + "; ".join(problems[:5]) if problems else "")


def _sql_url(backend: str, directory: Path) -> tuple[str, Callable[[], None]]:
    """A fresh SQLite file, or a PostgreSQL server of our own; and what removes it."""
    from bench.sqldb import PrivatePostgres

    if backend == "sqlite":
        return f"sqlite:///{directory / 'data.db'}", lambda: None
    postgres = PrivatePostgres().start()
    return postgres.url, postgres.cleanup


def sql_kill_row(backend: str, what: str, kills: int, every: float) -> Row:
    from bench.sql_faults import server_killed, worker_killed

    run = server_killed if what == "server" else worker_killed
    with tempfile.TemporaryDirectory() as directory:
        url, remove = _sql_url(backend, Path(directory))
        try:
            result = run(Path(directory), url, kills, every)
        finally:
            remove()
    label = "the server" if what == "server" else "one gunicorn worker"
    return Row(
        "Faults (SQL)",
        f"SIGKILL of {label}, {backend} (long)",
        f"gunicorn 2 workers x 4 threads on {backend}; 4 threads adding versions to one "
        f"prompt and promoting every other one; {label} SIGKILLed {kills} times, "
        f"every {every:g} s"
        + (", then started again on the same storage" if what == "server" else ""),
        _with_problems(result.summary(), result.problems),
        _verdict(result.problems),
    )


def postgres_outage_row(down_seconds: float) -> Row:
    from bench.sql_faults import postgres_restarted

    with tempfile.TemporaryDirectory() as directory:
        result = postgres_restarted(Path(directory), down_seconds)
    return Row(
        "Faults (SQL)",
        f"PostgreSQL stopped and started, {down_seconds:.0f} s (long)",
        "gunicorn 2 workers on a PostgreSQL server of its own, 4 threads writing; "
        f"`pg_ctl stop -m immediate` for {down_seconds:.0f} s while 4 endpoints are probed "
        "back to back, then `pg_ctl start`",
        _with_problems(result.summary(), result.problems),
        _verdict(result.problems),
    )


def bad_sqlite_rows() -> list[Row]:
    from bench.sql_faults import bad_sqlite_files

    with tempfile.TemporaryDirectory() as directory:
        results = bad_sqlite_files(Path(directory))
    return [
        Row(
            "Hostile input (SQL)",
            f"SQLite file: {bad.name}",
            f"`promptsvc serve` and gunicorn (2 workers) started on {bad.name}",
            _with_problems("; ".join(bad.outcomes), bad.problems),
            _verdict(bad.problems),
        )
        for bad in results
    ]


# ------------------------------------------------------------------------- the suite


def suite_rows(junit: Path) -> tuple[list[Row], str]:
    """Run tests/reliability; one row per test from its junit properties."""
    print("[reliability] pytest tests/reliability and the SQL fault tests ...", flush=True)
    command = [
        # -m "": the slow runs too, which the suite's addopts leave out.
        sys.executable, "-m", "pytest", str(SUITE), *SQL_TESTS, "-q", "-m", "",
        "-p", "no:cacheprovider", "--junitxml", str(junit), "-o", "junit_family=xunit1",
    ]  # fmt: skip
    completed = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False
    )
    summary = (completed.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"[reliability] pytest: {summary}", flush=True)
    rows = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") or "" for p in case.iter("property")}
        module = (case.get("classname") or "").rsplit(".", 1)[-1]
        name = case.get("name") or ""
        outcome, note = "passed", ""
        skipped, failure = case.find("skipped"), case.find("failure")
        error = case.find("error")
        if skipped is not None and skipped.get("type") == "pytest.xfail":
            outcome, note = "FAILING (xfail)", skipped.get("message") or ""
        elif skipped is not None:
            outcome, note = "skipped", skipped.get("message") or ""
        elif failure is not None or error is not None:
            element = failure if failure is not None else error
            assert element is not None
            outcome, note = "FAILED", (element.get("message") or "")[:300]
        tried = props.get("input") or props.get("doc") or name.replace("_", " ")
        result = props.get("result") or ("as asserted" if outcome == "passed" else "")
        if note:
            result = f"{result} ({note})" if result else note
        rows.append(Row(AREAS.get(module, module), name, tried, result, outcome))
    return rows, summary


def write_doc(long_rows: list[Row], suite: list[Row], summary: str, command: str) -> None:
    rev = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    failing = [r for r in long_rows + suite if r.outcome != "passed"]
    known = [r for r in suite if r.outcome.startswith("FAILING")]
    text = f"""# Reliability and security campaign

What load is held, which faults are survived, which bad inputs were tried, and that
nothing was lost. Every row below was produced by the run named here; rerun the command
to refresh this page (it is written by `bench/reliability.py`, never by hand).

- Command: `{command}`
- Run: {stamp}, commit {rev or "unknown"}, {machine()}
- Suite: `pytest -m '' tests/reliability` (the slow runs too) and the SQL fault and refusal tests
  ({", ".join(f"`{t.split('::')[-1]}`" for t in SQL_TESTS)}) -> {summary}
- Rows not "passed": {len(failing)} of {len(long_rows) + len(suite)}

Outcome "FAILING (xfail)" is a test marked as failing for a known bug, with its reason.

## Long runs

{_table(long_rows)}

## Test suite (tests/reliability and the SQL tests named above)

{_table(suite)}

## Known bugs (tests marked xfail)

{chr(10).join(f"- {r.test}: {r.result}" for r in known) if known else "None."}

{ATTACKS.read_text().rstrip()}

## How the limits and checks are set

- Token endpoints: per client and address (client IP + org + client id) 30 failed
  attempts per minute (`PROMPTSVC_TOKEN_RATE_LIMIT`), per client IP 300 requests per
  minute (`PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP`); sign-in: per username and address 10
  failures, per IP 60 attempts, device user codes 10 wrong per address; `off` turns one
  off. 429 `too_many_requests` with `Retry-After`. Counters in the app's storage
  (identity/ratelimit.py).
- Event streams: one token subject a quarter and one org half of
  `PROMPTSVC_EVENT_STREAMS` per process (429), the process all of them (503).
- Error shape: every 4xx/5xx is `{{code, message, error}}` with `error == code`
  ([api.md](api.md) section 9); the realm token endpoint's 400/401/429 are RFC 6749
  bodies plus `code`/`message`.
- A PromptVersion is complete when it has all 15 fields of [api.md](api.md) section 4.1
  with their types, `is_production` matches `status`, timestamps are RFC 3339 UTC with
  `Z`.
"""
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(text)
    print(f"[reliability] wrote {DOC}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short long runs")
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument(
        "--only",
        choices=sorted(GROUPS),
        action="append",
        help="run only these long runs (repeatable), print their rows, run no suite and "
        "leave docs/reliability.md as it is",
    )
    args = parser.parse_args()
    examples, seconds, down, drop = (8, 8.0, 3.0, 5.0) if args.quick else (40, 30.0, 10.0, 15.0)
    kills, every, pg_down = (2, 1.5, 3.0) if args.quick else (5, 3.0, 10.0)
    runs: dict[str, list[tuple[str, Callable[[], Row | list[Row]]]]] = {
        "fuzz": [
            ("fuzz memory", lambda: fuzz_row("memory", examples, args.seed)),
            ("fuzz redis", lambda: fuzz_row("redis", examples, args.seed)),
        ],
        "redis": [
            ("gunicorn load", lambda: load_row(seconds, processes=4, workers=2)),
            ("redis outage", lambda: outage_row(down)),
            ("dropped connections", lambda: drop_row(drop, kill_every=0.005)),
        ],
        "sql": [
            *(
                (f"{backend}: SIGKILL {what}", partial(sql_kill_row, backend, what, kills, every))
                for backend in ("sqlite", "postgresql")
                for what in ("server", "worker")
            ),
            ("postgresql stopped and started", lambda: postgres_outage_row(pg_down)),
            ("bad SQLite files", bad_sqlite_rows),
        ],
    }
    assert set(runs) == GROUPS
    long_rows: list[Row] = []
    for group, group_runs in runs.items():
        if args.only and group not in args.only:
            continue
        for name, run in group_runs:
            long_rows += _timed(name, run)
    if args.only:
        print(_table(long_rows))
        return 0 if all(r.outcome == "passed" for r in long_rows) else 1
    with tempfile.TemporaryDirectory() as directory:
        suite, summary = suite_rows(Path(directory) / "junit.xml")
    command = "python -m bench.reliability" + (" --quick" if args.quick else "")
    write_doc(long_rows, suite, summary, command)
    return 0 if all(r.outcome == "passed" for r in long_rows + suite) else 1


if __name__ == "__main__":
    raise SystemExit(main())
