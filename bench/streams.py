"""Event streams benchmark: ``python -m bench.streams [--redis-url URL] [--quick]``.

One promptsvc instance (gunicorn with the shipped gunicorn.conf.py and its number of
workers unless ``--workers`` says otherwise, on real Redis) holds ``--streams`` open
Server-Sent Event streams (``GET /api/v1/events``, 10,000 by default) from
``--clients`` client processes (bench.stream_clients: raw HTTP/1.1 connections on
loopback, one epoll loop each). Each round starts a fresh instance and measures:

* GET production throughput (wrk, keep-alive, a read token) before any stream, with
  every stream open, and after they closed; the ratios to before are set against their
  goal (at least 0.9);
* for ``--promotions`` promotions made through the API while the streams are open (each
  a second after the version's creation, whose event went to every stream too): the
  time from sending the promote request until each stream has its ``version.promoted``
  frame, both as the frame arrived in the client's socket (the kernel's receive time:
  when the server wrote it) and as the client process read it (p50, p99, max over every
  stream and promotion; goal: p99 under 1 s);
* the workers' threads and resident memory (added up) at each of those three points,
  and the instance's memory growth per open stream (goal: at most 20 KiB).

The soft limit of open files is raised to fit the streams (they are descriptors in
the server and in the clients). Writes the "streams" section of docs/benchmarks.md.
The Redis db at ``--redis-url`` (default db 10) is FLUSHed before and after: give it a
db nobody else uses.
"""

from __future__ import annotations

import argparse
import os
import resource
import runpy
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis

from bench.http import ADMIN_SECRET, ROOT, gunicorn, seed, write_bootstrap
from bench.report import table, write_section
from bench.stream_clients import Holder
from bench.wrk import WrkResult, tree_cpu_seconds, wrk
from tests.servers import Server

PRODUCTION = "/api/v1/prompts/support/production"
GOAL_RATIO = 0.9
GOAL_P99_S = 1.0
GOAL_KIB_PER_STREAM = 20
DELIVERY_TIMEOUT = 30.0  # a promotion not seen by every stream by then is a failure
SETTLE = 1.0  # seconds of quiet before each wrk run
WARM_UP = 5  # seconds of wrk on a new instance (every worker) before its first run


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


def worker_pids(master: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master:
                found.append(int(entry))
    if not found:
        raise SystemExit("no gunicorn worker found")
    return found


def threads_and_rss(pids: list[int]) -> tuple[int, float]:
    """Threads and resident MiB of the processes ``pids``, added up."""
    threads, rss = 0, 0.0
    for pid in pids:
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        threads += int(status["Threads"])
        rss += int(status["VmRSS"].split()[0]) / 1024
    return threads, rss


@dataclass
class Round:
    """One fresh instance: a run before any stream, one with every stream open, one
    after they closed; the workers' threads and memory at each of those points."""

    fresh: WrkResult
    with_streams: WrkResult
    after: WrkResult
    arrived_s: list[float]  # promote sent -> frame in the client's socket
    read_s: list[float]  # promote sent -> frame read by the client process
    promotion_cpu_s: list[float]  # the instance's CPU time from promote to every frame
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
    # Every stream is a descriptor in the server and one in a client process: raise the
    # soft limit (inherited by both) as far as the hard one allows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.streams + 1000
    if hard != resource.RLIM_INFINITY and hard < wanted:
        raise SystemExit(
            f"{args.streams} streams need ulimit -n {wanted}; the hard limit is {hard}"
        )
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else hard, hard)
        )
    redis.Redis.from_url(args.redis_url).flushdb()
    workdir = Path(tempfile.mkdtemp(prefix="bench-streams-"))
    env = {
        "PROMPTSVC_STORAGE_URL": args.redis_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(write_bootstrap(workdir)),
        "PROMPTSVC_WORKERS": str(args.workers),
        "PROMPTSVC_THREADS": str(args.threads),
        "PROMPTSVC_EVENT_STREAMS": str(args.streams),
        # Every stream here is one read token's, which by default may hold only a quarter
        # of them (its org half): lift both caps to measure the workers' own limit.
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
        # The fastest of a few runs: the client processes, Redis and wrk share the cores
        # with the server, and the best run is the one least disturbed by them.
        runs = []
        for _ in range(args.runs):
            time.sleep(SETTLE)
            result = wrk(url, args.seconds, args.connections, 1, read_token, master)
            if result.errors:
                raise SystemExit(f"wrk saw {result.errors} errors")
            runs.append(result)
        return max(runs, key=lambda run: run.requests_per_s)

    def new_version() -> int:
        created = api.post("/api/v1/prompts/support/versions", json={"content": "v"})
        created.raise_for_status()
        number: int = created.json()["version"]
        return number

    wrk(url, WARM_UP, args.connections, 1, read_token, master)  # imports, pools, memos
    workers = worker_pids(master)
    fresh = load()
    threads_fresh, rss_fresh = threads_and_rss(workers)
    holder = Holder(server.port, read_token, args.streams, args.clients)
    holder.open()
    with_streams = load()
    threads_open, rss_open = threads_and_rss(workers)
    arrived: list[float] = []
    read: list[float] = []
    promotion_cpu: list[float] = []
    for _ in range(args.promotions):
        version = new_version()
        time.sleep(SETTLE)  # the version.created event has reached every stream
        cpu_before = tree_cpu_seconds(master)
        sent = time.time()
        api.post(f"/api/v1/prompts/support/versions/{version}/promote").raise_for_status()
        for came, taken in holder.wait_for(version, DELIVERY_TIMEOUT):
            arrived.append(came - sent)
            read.append(taken - sent)
        promotion_cpu.append(tree_cpu_seconds(master) - cpu_before)
    if holder.still_open() != args.streams:
        raise SystemExit(f"{args.streams - holder.still_open()} streams ended early")
    holder.close()
    # The stream loop hears each client leave; the run after waits until the server
    # closed every connection, so that its cleanup does not weigh on that run.
    wait_until_closed(server.port)
    after = load()
    threads_after, rss_after = threads_and_rss(workers)
    api.close()
    return Round(
        fresh,
        with_streams,
        after,
        arrived,
        read,
        promotion_cpu,
        (threads_fresh, threads_open, threads_after),
        (rss_fresh, rss_open, rss_after),
    )


HEADERS = [
    "GET production",
    "requests/s",
    "p50 ms",
    "p99 ms",
    "server CPU us/req",
    "workers' threads",
    "workers' RSS MiB",
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
    arrived = [d for r in rounds for d in r.arrived_s]
    read = [d for r in rounds for d in r.read_s]

    def spread(times: list[float]) -> str:
        p50, p99, worst = (percentile(times, 50), percentile(times, 99), max(times))
        verdict = "meets" if p99 < GOAL_P99_S else "misses"
        return (
            f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {worst * 1000:.0f} ms"
            f" (goal p99 under {GOAL_P99_S:g} s: {verdict} it)"
        )

    ratio_verdict = "meets" if ratio >= GOAL_RATIO else "misses"
    after_verdict = "meets" if after_ratio >= GOAL_RATIO else "misses"
    fan_out_ms = median([c for r in rounds for c in r.promotion_cpu_s]) * 1000
    per_stream = median([(r.rss_mib[1] - r.rss_mib[0]) * 1024 / args.streams for r in rounds])
    memory_verdict = "meets" if per_stream <= GOAL_KIB_PER_STREAM else "misses"
    per_round = ", ".join(f"{r:.2f}" for r in ratios)
    after_rounds = ", ".join(f"{r.after_ratio:.2f}" for r in rounds)
    body = f"""
Load average when the run finished: {os.getloadavg()[0]:.1f} (2 cores, shared with other
work; wrk, Redis, the server and the client processes holding the streams share them).

Each of {args.rounds} rounds starts a fresh instance, `gunicorn -c gunicorn.conf.py
wsgi:app` with {args.workers} gthread worker(s) of `PROMPTSVC_THREADS={args.threads}`
request threads and `PROMPTSVC_EVENT_STREAMS={args.streams}`, on Redis, and runs wrk
({args.connections} keep-alive connections, {args.seconds:g} s, after a {WARM_UP:g} s
warm-up) on GET production at three points, {args.runs} run(s) each, the fastest kept:
before any stream; while {args.clients} client
processes (raw HTTP/1.1 connections on loopback, an epoll loop each: bench/stream_clients.py)
hold {args.streams:,} open `GET /api/v1/events` streams, during which {args.promotions}
promotions are made through the API, each a second after its version was created (that
event goes to every stream too); and after the streams closed. The table shows medians
over the rounds; "server CPU" is the gunicorn processes' user+system CPU time per
request; threads and memory are the workers', added up, from /proc, after each run. The
kernel hands the streams' connections to the workers as they accept them.

{table(HEADERS, rows)}

**Throughput with the streams open / before any: {ratio:.2f}** (median of the per-round
ratios {per_round}); goal at least {GOAL_RATIO}: {ratio_verdict} it.

**After the streams closed: {after_ratio:.2f} of before** (median of the per-round ratios
{after_rounds}); goal at least {GOAL_RATIO}: {after_verdict} it.

**A promotion reaches every stream**, timed from sending the promote request, over
{len(read):,} deliveries ({args.promotions} promotions x {args.streams:,} streams x
{args.rounds} rounds):

- **in the client's socket: {spread(arrived)}**. This is the kernel's receive time of
  the frame (`SO_TIMESTAMPNS`); on loopback the server's write delivers at once, so it
  is when the server wrote the frame to that stream, whatever the client processes do.
- **read by the client process: {spread(read)}**. This adds the clients' own delay:
  their {args.clients} processes share the 2 cores with the server, and are woken by
  its writes while it is still writing.

The instance's own CPU time (the gunicorn processes') from sending a promote request
until every stream had its frame (the promotion, the read of the log and
{args.streams:,} frames written, one `send` each): {fan_out_ms:.0f} ms, median over the
promotions. On a loaded machine the workers get a share of the cores, and the delivery
times above stretch with it.

**Memory: the instance grows by {per_stream:.1f} KiB per open stream** (RSS with the
streams open minus before, over {args.streams:,}; median of the rounds); goal at most
{GOAL_KIB_PER_STREAM} KiB: {memory_verdict} it.

How: an open stream holds no thread. Its request takes the client's connection from
gunicorn and gives it to the worker's stream loop (promptsvc/streaming.py); one reader
thread per org in each worker does the blocking read of the org's event stream in Redis
(promptsvc/events.py) and tells the org's channel on the loop once per batch, which
renders the frames once and writes the same bytes to every stream that is up to date,
in one pass, waking no coroutine (promptsvc/event_streams.py). Comment lines (every 14 s)
and token expiries come from one timer per org over a wheel of due times. So the
streams cost no thread, no Redis connection and no CPU while nothing happens, a batch
costs one `send` per stream, and the loop hears at once when a client leaves.
"""
    print(body)
    title = f"Event streams: {args.streams:,} open streams on one instance"
    write_section("streams", title, COMMAND, body)


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
    parser.add_argument(
        "--workers",
        type=int,
        default=shipped["workers"],
        help="gunicorn workers, PROMPTSVC_WORKERS (default: %(default)s, the shipped one)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=shipped["request_threads"],
        help="request threads per worker, PROMPTSVC_THREADS (default: %(default)s)",
    )
    parser.add_argument(
        "--streams",
        type=int,
        default=10_000,
        help="streams to hold, and PROMPTSVC_EVENT_STREAMS (default: %(default)s)",
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="client processes holding the streams"
    )
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--seconds", type=float, default=4, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians reported)")
    parser.add_argument(
        "--runs", type=int, default=3, help="wrk runs at each point (the fastest is kept)"
    )
    parser.add_argument("--promotions", type=int, default=5, help="promotions per round")
    parser.add_argument("--quick", action="store_true", help="2 short rounds (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.promotions, args.runs = 2, 2, 2, 1
    run(args)


if __name__ == "__main__":
    main()
