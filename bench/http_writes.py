"""Writes over HTTP against a bare write: ``python -m bench.http_writes [--storages
sqlite,postgresql] [--postgres-url URL] [--writes N] [--quick]``.

For each SQL storage, two servers under the same gunicorn settings
(``gunicorn -c gunicorn.conf.py``, 1 gthread worker x 4 threads): promptsvc on that
storage, and a bare Flask endpoint (bench/http_bare.py, ``POST /bare/write``) that
writes one row in one transaction on the same database through an engine made as
promptsvc's (the SQLite file in WAL mode with the same pragmas; the PostgreSQL database
at ``--postgres-url``, emptied before and after: bench/sqldb.py). One client with a
keep-alive connection to each sends, N times, interleaved: a create-version, a
promotion of that version to production, and a bare write, the three in a rotating
order so that whatever else the machine does falls on each alike. Each request is
timed from send to the end of the answer.

Printed per storage, and written to the "http-writes" section of docs/benchmarks.md:
the median latency of each, and promote / bare and create-version / bare (the ratio
of the medians, and the median of the per-iteration ratios), against the goal of at
most 2 (TARGET).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import sqldb
from bench.http import (
    ADMIN_SECRET,
    CONTENT,
    METADATA,
    TAGS,
    gunicorn,
    write_bootstrap,
)
from bench.report import table, write_section
from bench.wrk import tree_cpu_seconds
from tests.servers import Server

# promote (and create-version) over HTTP / the bare write, at most.
TARGET = 2.0
STORAGES = ("sqlite", "postgresql")
PROMPT = "/api/v1/prompts/bench"
OPERATIONS = ("create-version", "promote", "bare write")


@dataclass
class Samples:
    """Latencies in ms per operation, in iteration order."""

    ms: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})
    # CPU seconds of each server's processes (master and worker) over the timed part.
    api_cpu_s: float = 0.0
    bare_cpu_s: float = 0.0

    def cpu_ratio(self) -> float:
        """promptsvc's server CPU per write (create-version and promote alike) over the
        bare server's per write."""
        api = self.api_cpu_s / (len(self.ms["create-version"]) + len(self.ms["promote"]))
        return api / (self.bare_cpu_s / len(self.ms["bare write"]))

    def median(self, operation: str) -> float:
        return statistics.median(self.ms[operation])

    def ratio(self, operation: str) -> float:
        """The median of ``operation``'s latency over the bare write's."""
        return self.median(operation) / self.median("bare write")

    def paired(self, operation: str) -> float:
        """The median of the per-iteration ratios of ``operation`` to the bare write."""
        pairs = zip(self.ms[operation], self.ms["bare write"], strict=True)
        return statistics.median(mine / bare for mine, bare in pairs)


def token(http: httpx.Client) -> str:
    answer = http.post(
        "/v1/auth/sdk-token",
        json={"account_id": "bench", "key_id": "bench-admin", "key_secret": ADMIN_SECRET},
    )
    answer.raise_for_status()
    return str(answer.json()["access_token"])


def measure(
    api: httpx.Client, bare: httpx.Client, writes: int, warmup: int, pids: tuple[int, int]
) -> Samples:
    """``warmup`` iterations untimed, then ``writes`` timed ones; ``pids``: the two
    servers' (promptsvc's, the bare one's), whose CPU time is taken."""
    samples = Samples()
    version: list[int] = []

    def create() -> httpx.Response:
        body = {"content": CONTENT, "metadata": METADATA, "tags": TAGS}
        answer = api.post(f"{PROMPT}/versions", json=body)
        version.append(answer.json()["version"])
        return answer

    def promote() -> httpx.Response:
        return api.post(f"{PROMPT}/versions/{version[-1]}/promote", json={})

    def bare_write() -> httpx.Response:
        return bare.post("/bare/write", content=CONTENT)

    calls = {"create-version": create, "promote": promote, "bare write": bare_write}
    expected = {"create-version": 201, "promote": 200, "bare write": 201}
    for i in range(warmup + writes):
        if i == warmup:
            cpu = [tree_cpu_seconds(pid) for pid in pids]
        # The bare write first, between, or last; a promotion always after its create.
        order = [["bare write", "create-version", "promote"],
                 ["create-version", "bare write", "promote"],
                 ["create-version", "promote", "bare write"]][i % 3]  # fmt: skip
        for operation in order:
            started = time.perf_counter()
            answer = calls[operation]()
            elapsed = (time.perf_counter() - started) * 1000
            if answer.status_code != expected[operation]:
                raise SystemExit(f"{operation}: {answer.status_code} {answer.text[:300]}")
            if i >= warmup:
                samples.ms[operation].append(elapsed)
    samples.api_cpu_s = tree_cpu_seconds(pids[0]) - cpu[0]
    samples.bare_cpu_s = tree_cpu_seconds(pids[1]) - cpu[1]
    return samples


def run_storage(url: str, args: argparse.Namespace, workdir: Path) -> Samples:
    env = {
        "PROMPTSVC_BOOTSTRAP_FILE": str(write_bootstrap(workdir)),
        "PROMPTSVC_STORAGE_URL": url,
        "PROMPTSVC_WORKERS": "1",
        "PROMPTSVC_THREADS": "4",
        "PROMPTSVC_EVENT_STREAMS": "0",
    }
    servers: list[Server] = []
    try:
        api = gunicorn("wsgi:app", env)
        servers.append(api)
        api.start("/healthz")
        bare = gunicorn("bench.http_bare:app", {**env, "BENCH_WRITE_URL": url})
        servers.append(bare)
        bare.start("/healthz")
        with (
            httpx.Client(base_url=api.base_url, timeout=60) as api_http,
            httpx.Client(base_url=bare.base_url, timeout=60) as bare_http,
        ):
            api_http.headers["Authorization"] = f"Bearer {token(api_http)}"
            api_http.post("/api/v1/prompts", json={"name": "bench"}).raise_for_status()
            assert api.process is not None and bare.process is not None
            pids = (api.process.pid, bare.process.pid)
            return measure(api_http, bare_http, args.writes, args.warmup, pids)
    finally:
        for server in servers:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres-url", default=sqldb.POSTGRES_URL)
    parser.add_argument("--storages", default=",".join(STORAGES))
    parser.add_argument("--writes", type=int, default=300, help="timed iterations")
    parser.add_argument("--quick", action="store_true", help="50 iterations, no docs update")
    args = parser.parse_args()
    args.storages = [s.strip() for s in args.storages.split(",") if s.strip()]
    if not args.storages or set(args.storages) - set(STORAGES):
        parser.error(f"--storages: choose among {', '.join(STORAGES)}")
    if args.quick:
        args.writes = 50
    args.warmup = 20
    load = os.getloadavg()[0]
    results: dict[str, Samples] = {}
    for storage in args.storages:
        workdir = Path(tempfile.mkdtemp(prefix="bench-http-writes-"))
        try:
            if storage == "postgresql":
                sqldb.empty_postgres(args.postgres_url)
                url = args.postgres_url
            else:
                url = sqldb.sqlite_url(workdir)
            print(f"[http_writes] {storage}: {args.writes} iterations")
            results[storage] = run_storage(url, args, workdir)
        finally:
            if storage == "postgresql":
                sqldb.empty_postgres(args.postgres_url)
            shutil.rmtree(workdir, ignore_errors=True)
    body = report(results, args, load, os.getloadavg()[0])
    print(body)
    if not args.quick:
        command = " ".join(["python -m bench.http_writes", *sys.argv[1:]])
        title = "Writes over HTTP against a bare single-row write"
        write_section("http-writes", title, command, body)
    missed = [
        f"{storage} {op}"
        for storage, samples in results.items()
        for op in ("create-version", "promote")
        if samples.ratio(op) > TARGET
    ]
    if missed:
        raise SystemExit(f"over {TARGET}x the bare write: {', '.join(missed)}")


def report(results: dict[str, Samples], args: argparse.Namespace, load: float, end: float) -> str:
    rows: list[list[object]] = []
    cpu = "; ".join(f"{storage} {samples.cpu_ratio():.2f}" for storage, samples in results.items())
    for storage, samples in results.items():
        bare = samples.median("bare write")
        rows.append([storage, "bare write (one row, one transaction)", f"{bare:.2f}", "1", "1", ""])
        for op in ("create-version", "promote"):
            ratio = samples.ratio(op)
            rows.append(
                [
                    storage,
                    op,
                    f"{samples.median(op):.2f}",
                    f"**{ratio:.2f}**",
                    f"{samples.paired(op):.2f}",
                    "met" if ratio <= TARGET else "MISSED",
                ]
            )
    headers = [
        "storage",
        "request",
        "median ms",
        "/ bare (medians)",
        "/ bare (median of per-iteration ratios)",
        f"goal <= {TARGET:g}",
    ]
    return f"""
Load average at the start and the end: {load:.1f}, {end:.1f} (2 cores, shared with other
engineers' work while this ran; the client, the servers and the database share them).

Each storage: promptsvc and a bare Flask endpoint (bench/http_bare.py: one INSERT of the
request's body in one transaction, on an engine made as promptsvc's, so the same
`BEGIN IMMEDIATE` and `synchronous=NORMAL` on the same SQLite file, and the same
PostgreSQL server and database with fsync on) under the same gunicorn settings (1
gthread worker x 4 threads, keep-alive). One client sends, {args.writes} times after
{args.warmup} untimed: a create-version (1.1 KB of content, metadata and tags), the
promotion of that version to production (its previous production archived, a history
record, the event), and a bare write, in a rotating order. Latency is send to end of
answer on the client; promptsvc's includes its bearer token check, body validation and
JSON answer.

{table(headers, rows)}

Server CPU per write (user + system time of the gunicorn master and worker over the
timed part, per request; the database server's own not included), promptsvc's
create-version and promote together over the bare endpoint's: {cpu}. It does not
depend on how much of the cores the machine's other work leaves the servers, which the
latencies do. With
the load average well above the 2 cores, every request mostly waits for a core, which
pulls the latency ratios toward 1; then the CPU ratio is the one to go by.
"""


if __name__ == "__main__":
    main()
