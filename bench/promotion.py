"""Promotion latency under concurrent writers: ``python -m bench.promotion
[--seconds S] [--writers N] [--storages sqlite,postgresql,redis] [--redis-url URL]
[--postgres-url URL] [--quick]``.

gunicorn (the shipped gunicorn.conf.py, 2 gthread workers x 4 threads) on a SQLite file
(WAL, in a temporary directory), on the PostgreSQL database at ``--postgres-url``
(emptied before and after, bench/sqldb.py), and, as the reference of the same run, on
the Redis db at ``--redis-url`` (FLUSHed before and after: give it a db nobody else
uses). By default SQLite and Redis. N writer
processes (8 by default), each with its own keep-alive HTTP connection, add a draft to
one shared prompt and promote it, over and over, for S seconds: every promotion writes
the version's status, the previous production's, a history record and an event in one
transaction, and all of them contend for the same prompt (on SQLite, for the file's one
write lock). Each request is timed on the client from send to the end of the answer.

Afterwards the run is checked through the API: one published version, and as many
history records as promotions answered 200. Writes the "promotion" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

from bench import sqldb
from bench.http import ADMIN_SECRET, gunicorn, write_bootstrap
from bench.report import table, write_section
from tests.servers import Server

STORAGES = ("sqlite", "postgresql", "redis")
DEFAULT_STORAGES = ("sqlite", "redis")
PROMPT = "/api/v1/prompts/contended"


@dataclass
class WriterResult:
    promote_ms: list[float] = field(default_factory=list)
    create_ms: list[float] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)  # "create 503" -> count


def writer(base_url: str, token: str, start_at: float, seconds: float) -> WriterResult:
    """One writer process: create a draft, promote it, until the time is up."""
    result = WriterResult()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
        time.sleep(max(0.0, start_at - time.time()))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.perf_counter()
            created = http.post(f"{PROMPT}/versions", json={"content": "x {{y}}"})
            result.create_ms.append((time.perf_counter() - t0) * 1000)
            if created.status_code != 201:
                key = f"create {created.status_code}"
                result.failures[key] = result.failures.get(key, 0) + 1
                continue
            version = created.json()["version"]
            t0 = time.perf_counter()
            promoted = http.post(f"{PROMPT}/versions/{version}/promote", json={})
            if promoted.status_code == 200:
                result.promote_ms.append((time.perf_counter() - t0) * 1000)
            else:
                key = f"promote {promoted.status_code}"
                result.failures[key] = result.failures.get(key, 0) + 1
    return result


@dataclass
class Run:
    storage: str
    promote_ms: list[float]
    create_ms: list[float]
    failures: dict[str, int]
    seconds: float
    problems: list[str]

    def percentile(self, samples: list[float], p: float) -> float:
        ordered = sorted(samples)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


def token_for(base_url: str) -> str:
    answer = httpx.post(
        f"{base_url}/v1/auth/sdk-token",
        json={"account_id": "bench", "key_id": "bench-admin", "key_secret": ADMIN_SECRET},
        timeout=30,
    )
    answer.raise_for_status()
    return str(answer.json()["access_token"])


def check(base_url: str, token: str, promotions: int) -> list[str]:
    """What the API shows after the run must match what the writers were told."""
    problems = []
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
        published = http.get(f"{PROMPT}/versions", params={"status": "published"}).json()
        if len(published["items"]) != 1:
            problems.append(f"{len(published['items'])} published versions, not 1")
        records, cursor = 0, None
        while True:
            params: dict[str, str | int] = {"limit": 200}
            if cursor:
                params["cursor"] = cursor
            page = http.get(f"{PROMPT}/history", params=params).json()
            records += len(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                break
        if records != promotions:
            problems.append(f"{records} history records for {promotions} promotions answered 200")
    return problems


def run_one(storage: str, url: str, args: argparse.Namespace, workdir: Path) -> Run:
    env = {
        "PROMPTSVC_STORAGE_URL": url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(write_bootstrap(workdir)),
        "PROMPTSVC_WORKERS": "2",
        "PROMPTSVC_THREADS": "4",
        "PROMPTSVC_EVENT_STREAMS": "0",
    }
    server: Server = gunicorn("wsgi:app", env)
    server.start("/healthz")
    try:
        token = token_for(server.base_url)
        httpx.post(
            f"{server.base_url}/api/v1/prompts",
            json={"name": "contended"},
            headers={"Authorization": f"Bearer {token}"},
        ).raise_for_status()
        context = multiprocessing.get_context("spawn")
        with context.Pool(args.writers) as pool:
            start_at = time.time() + 3  # every writer imported and connected by then
            pending = [
                pool.apply_async(writer, (server.base_url, token, start_at, args.seconds))
                for _ in range(args.writers)
            ]
            results = [p.get(timeout=args.seconds + 120) for p in pending]
        failures: dict[str, int] = {}
        for result in results:
            for key, count in result.failures.items():
                failures[key] = failures.get(key, 0) + count
        promote = [ms for r in results for ms in r.promote_ms]
        create = [ms for r in results for ms in r.create_ms]
        problems = check(server.base_url, token, len(promote))
    finally:
        server.stop()
    return Run(storage, promote, create, failures, args.seconds, problems)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--postgres-url", default=sqldb.POSTGRES_URL)
    parser.add_argument("--storages", default=",".join(DEFAULT_STORAGES))
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--quick", action="store_true", help="3 s, no docs update")
    args = parser.parse_args()
    args.storages = [s.strip() for s in args.storages.split(",") if s.strip()]
    if not args.storages or set(args.storages) - set(STORAGES):
        parser.error(f"--storages: choose among {', '.join(STORAGES)}")
    if args.quick:
        args.seconds = 3
    load = os.getloadavg()[0]
    runs = []
    for storage in args.storages:
        workdir = Path(tempfile.mkdtemp(prefix="bench-promotion-"))
        try:
            if storage == "redis":
                redis.Redis.from_url(args.redis_url).flushdb()
                url = args.redis_url
            elif storage == "postgresql":
                sqldb.empty_postgres(args.postgres_url)
                url = args.postgres_url
            else:
                url = sqldb.sqlite_url(workdir)
            print(f"[promotion] {storage}: {args.writers} writers for {args.seconds:g} s")
            runs.append(run_one(storage, url, args, workdir))
        finally:
            if storage == "redis":
                redis.Redis.from_url(args.redis_url).flushdb()
            elif storage == "postgresql":
                sqldb.empty_postgres(args.postgres_url)
            shutil.rmtree(workdir, ignore_errors=True)
    body = report(runs, args, load)
    print(body)
    if not args.quick:
        command = " ".join(["python -m bench.promotion", *sys.argv[1:]])
        title = "Promotion latency: 2 gunicorn workers, concurrent writers"
        write_section("promotion", title, command, body)
    if any(run.problems for run in runs):
        raise SystemExit("the API's state after the run does not match the answers")


def report(runs: list[Run], args: argparse.Namespace, load: float) -> str:
    rows: list[list[object]] = []
    for run in runs:
        p = run.percentile
        rows.append(
            [
                run.storage,
                f"{len(run.promote_ms):,}",
                f"{len(run.promote_ms) / run.seconds:,.0f}",
                f"{statistics.median(run.promote_ms):.1f}",
                f"{p(run.promote_ms, 0.9):.1f}",
                f"**{p(run.promote_ms, 0.99):.1f}**",
                f"{max(run.promote_ms):.1f}",
                f"{statistics.median(run.create_ms):.1f} / {p(run.create_ms, 0.99):.1f}",
                ", ".join(f"{k}: {v}" for k, v in sorted(run.failures.items())) or "none",
                "; ".join(run.problems) or "match",
            ]
        )
    headers = [
        "storage",
        "promotions (200)",
        "promotions/s",
        "promote p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "create p50 / p99 ms",
        "other answers",
        "history vs answers",
    ]
    by = {run.storage: run for run in runs}
    ratio = ""
    if "sqlite" in by and "redis" in by:
        sqlite_p99 = by["sqlite"].percentile(by["sqlite"].promote_ms, 0.99)
        redis_p99 = by["redis"].percentile(by["redis"].promote_ms, 0.99)
        ratio = (
            f" Promotion p99 on SQLite / on Redis in this run: **{sqlite_p99 / redis_p99:.2f}x**."
        )
    sqlite_line = ""
    if "sqlite" in by:
        run = by["sqlite"]
        sqlite_line = (
            f"**Promotion p99 on SQLite with 2 gunicorn workers and {args.writers} concurrent "
            f"writers: {run.percentile(run.promote_ms, 0.99):.1f} ms** (p50 "
            f"{statistics.median(run.promote_ms):.1f} ms).{ratio}"
        )
    return f"""
Load average when the run started: {load:.1f} (2 cores; the writers, the server and any
other work on the machine share them).

`gunicorn -c gunicorn.conf.py wsgi:app`, 2 gthread workers x 4 threads, on each storage
in turn; {args.writers} writer processes, each on its own keep-alive connection, add a
draft to one shared prompt and promote it, back to back, for {args.seconds:g} s. Every
promotion changes two versions' status and writes a history record and an event in one
transaction; on SQLite all writers take turns at the file's one write lock (`BEGIN
IMMEDIATE`, storage/sql/engine.py), one transaction at a time across both workers.
Latencies are timed by the writers, send to end of answer; only promotions
answered 200 count. After the run the API must show one published version and a
history record per promotion answered 200 ("history vs answers").

{table(headers, rows)}

{sqlite_line}
"""


if __name__ == "__main__":
    main()
