"""Event streams benchmark: ``python -m bench.streams [--redis-url URL] [--quick]``.

One promptsvc instance (gunicorn with the shipped gunicorn.conf.py, one worker by
default, on real Redis) holds ``--streams`` open Server-Sent Event streams
(``GET /api/v1/events``, 1,000 by default) from one client process (asyncio, httpx and
httpx-sse, on loopback). Each round starts a fresh instance and measures:

* GET production throughput (wrk, keep-alive, a read token) before any stream, with
  every stream open, and after they closed; the ratio with / before is set against its
  goal (at least 0.9);
* for ``--promotions`` promotions made through the API while the streams are open: the
  time from sending the promote request until each stream has received its
  ``version.promoted`` frame (p50, p99, max over every stream and promotion; goal: p99
  under 1 s);
* the worker's threads and resident memory at each of those three points.

After the streams close, a few events let the server notice at once (a thread learns
its client left when a write to it fails). Writes the "streams" section of
docs/benchmarks.md. The Redis db at ``--redis-url`` (default db 10) is FLUSHed before
and after: give it a db nobody else uses.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import runpy
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis
from httpx_sse import aconnect_sse

from bench.http import (
    ADMIN_SECRET,
    ROOT,
    WrkResult,
    gunicorn,
    seed,
    write_bootstrap,
    wrk,
)
from bench.report import table, write_section
from tests.servers import Server

PRODUCTION = "/api/v1/prompts/support/production"
EVENTS = "/api/v1/events"
GOAL_RATIO = 0.9
GOAL_P99_S = 1.0
DELIVERY_TIMEOUT = 30.0  # a promotion not seen by every stream by then is a failure
OPEN_TIMEOUT = 120.0
SETTLE = 1.0  # seconds of quiet before each wrk run
WARM_UP = 2  # seconds of wrk on a new instance before its first measured run


@dataclass
class Holder:
    """``count`` open event streams, held by an asyncio loop in a thread of its own.

    ``seen[version]`` collects, for each promoted version number, the time each stream
    received its frame (``time.time()``).
    """

    base_url: str
    token: str
    count: int
    opened: int = 0
    failed: list[str] = field(default_factory=list)
    seen: dict[int, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._stop: asyncio.Event | None = None
        self._done: concurrent.futures.Future[None] | None = None

    def open(self) -> None:
        """Open every stream; returns when all answered (the server holds them then)."""
        self._thread.start()
        self._done = asyncio.run_coroutine_threadsafe(self._run(), self._loop)
        deadline = time.monotonic() + OPEN_TIMEOUT
        while self.opened + len(self.failed) < self.count:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {self.opened} of {self.count} streams opened")
            time.sleep(0.05)  # waiting for another thread's progress
        if self.failed:
            raise SystemExit(f"{len(self.failed)} streams failed, first: {self.failed[0]}")

    def still_open(self) -> int:
        with self.lock:
            return self.opened - len(self.failed)

    def wait_for(self, version: int, timeout: float) -> list[float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                times = self.seen.get(version, [])
                if len(times) >= self.count:
                    return list(times)
            time.sleep(0.005)
        raise SystemExit(f"version {version} reached {len(times)} of {self.count} streams")

    def close(self) -> None:
        assert self._stop is not None and self._done is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._done.result(60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        limits = httpx.Limits(max_connections=self.count + 10, max_keepalive_connections=0)
        timeout = httpx.Timeout(10.0, read=60.0)  # a comment line comes every 14 s
        headers = {"Authorization": f"Bearer {self.token}"}
        async with httpx.AsyncClient(
            base_url=self.base_url, limits=limits, timeout=timeout, headers=headers
        ) as client:
            tasks = []
            for start in range(0, self.count, 100):  # 100 connections at a time
                batch = [
                    asyncio.create_task(self._hold(client))
                    for _ in range(min(100, self.count - start))
                ]
                tasks += batch
                while self.opened + len(self.failed) < len(tasks):
                    await asyncio.sleep(0.01)
            await self._stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _hold(self, client: httpx.AsyncClient) -> None:
        try:
            async with aconnect_sse(client, "GET", EVENTS) as source:
                if source.response.status_code != 200:
                    await source.response.aread()
                    raise RuntimeError(f"{source.response.status_code}: {source.response.text}")
                with self.lock:
                    self.opened += 1
                async for sse in source.aiter_sse():
                    if sse.event == "version.promoted":
                        received = time.time()
                        version = json.loads(sse.data)["version"]
                        with self.lock:
                            self.seen.setdefault(version, []).append(received)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            with self.lock:
                self.failed.append(repr(exc))


def wait_until_closed(port: int, timeout: float = 60.0) -> None:
    """Until no connection to ``port`` is open (``ss``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["ss", "-tnH", "state", "established", f"( sport = :{port} )"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if not out.strip():
            return
        time.sleep(0.1)  # the worker closing connections
    raise SystemExit(f"connections to port {port} still open after {timeout:.0f} s")


def worker_pid(master: int) -> int:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master:
                return int(entry)
    raise SystemExit("no gunicorn worker found")


def threads_and_rss(pid: int) -> tuple[int, float]:
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(status["Threads"]), int(status["VmRSS"].split()[0]) / 1024


@dataclass
class Round:
    """One fresh instance: a run before any stream, one with every stream open, one
    after they closed; the worker's threads and memory at each of those points."""

    fresh: WrkResult
    with_streams: WrkResult
    after: WrkResult
    delivery_s: list[float]
    threads: tuple[int, int, int]
    rss_mib: tuple[float, float, float]

    @property
    def ratio(self) -> float:
        return self.with_streams.requests_per_s / self.fresh.requests_per_s

    @property
    def after_ratio(self) -> float:
        return self.after.requests_per_s / self.fresh.requests_per_s


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def run(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise SystemExit("bench.streams needs wrk: apt-get install -y wrk (Debian/Ubuntu)")
    redis.Redis.from_url(args.redis_url).flushdb()
    workdir = Path(tempfile.mkdtemp(prefix="bench-streams-"))
    env = {
        "PROMPTSVC_STORAGE_URL": args.redis_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(write_bootstrap(workdir)),
        "PROMPTSVC_WORKERS": str(args.workers),
        "PROMPTSVC_THREADS": str(args.threads),
        "PROMPTSVC_EVENT_STREAMS": str(args.streams),
        # Every stream here is one read token's, which by default may hold only a quarter
        # of them (its org half): lift both caps to measure the worker's own limit.
        "PROMPTSVC_EVENT_STREAMS_PER_CLIENT": str(args.streams),
        "PROMPTSVC_EVENT_STREAMS_PER_ORG": str(args.streams),
        # Streams end when their token expires: one token must outlast the whole run.
        "PROMPTSVC_TOKEN_LIFETIME": "3600",
    }
    rounds: list[Round] = []
    tokens: tuple[str, str] | None = None
    try:
        for _ in range(args.rounds):
            # A fresh instance each round (the data stays in Redis): a worker keeps the
            # threads of streams gone, so only a new one shows the state before any.
            server = gunicorn("wsgi:app", env)
            try:
                server.start("/healthz")
                if tokens is None:
                    tokens = seed_tokens(server.base_url)
                rounds.append(measure(args, server, *tokens))
            finally:
                server.stop()
    finally:
        redis.Redis.from_url(args.redis_url).flushdb()
    report(args, rounds)


def seed_tokens(base_url: str) -> tuple[str, str]:
    """The prompt (bench.http's), a read token and an admin token; tokens are verified
    with the signing key kept in Redis, so later instances take them too."""
    read_token, _ = seed(base_url)
    admin = httpx.post(
        base_url + "/v1/auth/sdk-token",
        json={"account_id": "bench", "key_id": "bench-admin", "key_secret": ADMIN_SECRET},
    ).json()["access_token"]
    return read_token, admin


def measure(args: argparse.Namespace, server: Server, read_token: str, admin: str) -> Round:
    assert server.process is not None
    master = server.process.pid
    url = server.base_url + PRODUCTION
    # No kept-alive connection: wait_until_closed counts every connection.
    api = httpx.Client(
        base_url=server.base_url,
        timeout=30,
        limits=httpx.Limits(max_keepalive_connections=0),
        headers={"Authorization": f"Bearer {admin}"},
    )

    def load() -> WrkResult:
        time.sleep(SETTLE)
        result = wrk(url, args.seconds, args.connections, 1, read_token, master)
        if result.errors:
            raise SystemExit(f"wrk saw {result.errors} errors")
        return result

    def new_version() -> int:
        created = api.post("/api/v1/prompts/support/versions", json={"content": "v"})
        created.raise_for_status()
        number: int = created.json()["version"]
        return number

    wrk(url, WARM_UP, args.connections, 1, read_token, master)  # imports, pools, memos
    worker = worker_pid(master)
    fresh = load()
    threads_fresh, rss_fresh = threads_and_rss(worker)
    holder = Holder(server.base_url, read_token, args.streams)
    holder.open()
    with_streams = load()
    threads_open, rss_open = threads_and_rss(worker)
    delivery: list[float] = []
    for _ in range(args.promotions):
        version = new_version()
        sent = time.time()
        api.post(f"/api/v1/prompts/support/versions/{version}/promote").raise_for_status()
        delivery += [t - sent for t in holder.wait_for(version, DELIVERY_TIMEOUT)]
    if holder.still_open() != args.streams:
        raise SystemExit(f"{args.streams - holder.still_open()} streams ended early")
    holder.close()
    # A thread learns that its client left when a write fails: the first write after
    # the close still goes out, the next one fails. Events some time apart make separate
    # writes, so the server lets go of every thread now; the run after waits until it
    # closed every connection, so that its cleanup does not weigh on that run.
    for _ in range(3):
        new_version()
        time.sleep(0.5)
    wait_until_closed(server.port)
    after = load()
    threads_after, rss_after = threads_and_rss(worker)
    api.close()
    return Round(
        fresh,
        with_streams,
        after,
        delivery,
        (threads_fresh, threads_open, threads_after),
        (rss_fresh, rss_open, rss_after),
    )


HEADERS = [
    "GET production",
    "requests/s",
    "p50 ms",
    "p99 ms",
    "server CPU us/req",
    "worker threads",
    "worker RSS MiB",
]


def report(args: argparse.Namespace, rounds: list[Round]) -> None:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    def row(label: str, runs: list[WrkResult], point: int) -> list[object]:
        return [
            label,
            f"{median([r.requests_per_s for r in runs]):,.0f}",
            f"{median([r.p50_ms for r in runs]):.2f}",
            f"{median([r.p99_ms for r in runs]):.2f}",
            f"{median([r.cpu_us_per_request for r in runs]):.0f}",
            f"{median([r.threads[point] for r in rounds]):.0f}",
            f"{median([r.rss_mib[point] for r in rounds]):.0f}",
        ]

    rows = [
        row("before any stream", [r.fresh for r in rounds], 0),
        row(f"{args.streams:,} streams open", [r.with_streams for r in rounds], 1),
        row("after they closed", [r.after for r in rounds], 2),
    ]
    ratios = [r.ratio for r in rounds]
    ratio = median(ratios)
    after_ratio = median([r.after_ratio for r in rounds])
    delivery = [d for r in rounds for d in r.delivery_s]
    p50, p99, worst = percentile(delivery, 50), percentile(delivery, 99), max(delivery)
    ratio_verdict = "meets" if ratio >= GOAL_RATIO else "misses"
    p99_verdict = "meets" if p99 < GOAL_P99_S else "misses"
    per_round = ", ".join(f"{r:.2f}" for r in ratios)
    after_rounds = ", ".join(f"{r.after_ratio:.2f}" for r in rounds)
    body = f"""
Load average when the run finished: {os.getloadavg()[0]:.1f} (2 cores; wrk, Redis, the
server and the client holding the streams share them).

Each of {args.rounds} rounds starts a fresh instance, `gunicorn -c gunicorn.conf.py
wsgi:app` with {args.workers} gthread worker(s) of `PROMPTSVC_THREADS={args.threads}`
request threads plus `PROMPTSVC_EVENT_STREAMS={args.streams}` stream threads, on Redis,
and runs wrk ({args.connections} keep-alive connections, {args.seconds:g} s, after a
{WARM_UP:g} s warm-up) on GET production three times: before any stream; while one
client process (asyncio, httpx, httpx-sse, on loopback) holds {args.streams:,} open
`GET /api/v1/events` streams, during which {args.promotions} promotions are made through
the API; and after the streams closed. The table shows medians over the rounds; "server
CPU" is the gunicorn processes' user+system CPU time per request; threads and memory are
the worker's, from /proc, after each run.

{table(HEADERS, rows)}

**Throughput with the streams open / before any: {ratio:.2f}** (median of the per-round
ratios {per_round}); goal at least {GOAL_RATIO}: {ratio_verdict} it.

After the streams closed: {after_ratio:.2f} of before (median of the per-round ratios
{after_rounds}). The worker then keeps the streams' threads, idle in its pool; why
requests cost it more CPU in that state has not been established here.

**A promotion reaches every stream: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms,
max {worst * 1000:.0f} ms** ({len(delivery):,} deliveries: {args.promotions} promotions x
{args.streams:,} streams x {args.rounds} rounds, timed from sending the promote request
to the client's receiving the frame, so the client's own work on {args.streams:,} frames
is in it); goal p99 under {GOAL_P99_S:g} s: {p99_verdict} it.

How: each open stream keeps one gthread thread, asleep on a lock of its own; one
reader thread per org in the worker does the blocking read of the org's event stream
in Redis and wakes them (promptsvc/events.py), so the streams cost no Redis connection
and no CPU while nothing happens (a comment line every 14 s each). The request threads
stay free for the rest of the API because the worker has `PROMPTSVC_EVENT_STREAMS`
threads on top of them and refuses (503) streams beyond that number.
"""
    print(body)
    write_section("streams", "Event streams: 1,000 open streams on one instance", COMMAND, body)


COMMAND = "python -m bench.streams"


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.streams", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("PROMPTSVC_BENCH_REDIS_URL", "redis://127.0.0.1:6379/10"),
        help="Redis db to use; it is FLUSHed (default: %(default)s)",
    )
    shipped = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers")
    parser.add_argument(
        "--threads",
        type=int,
        default=shipped["request_threads"],
        help="request threads per worker, PROMPTSVC_THREADS (default: %(default)s)",
    )
    parser.add_argument(
        "--streams",
        type=int,
        default=shipped["event_streams"],
        help="streams to hold, and PROMPTSVC_EVENT_STREAMS (default: %(default)s)",
    )
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--seconds", type=float, default=4, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=9, help="rounds (medians reported)")
    parser.add_argument("--promotions", type=int, default=5, help="promotions per round")
    parser.add_argument("--quick", action="store_true", help="2 short rounds (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.promotions = 2, 2, 2
    run(args)


if __name__ == "__main__":
    main()
