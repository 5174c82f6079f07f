"""Event streams benchmark: ``python -m bench.streams [--redis-url URL] [--quick]``.

One promptsvc instance (gunicorn with the shipped gunicorn.conf.py, one worker by
default, on real Redis) holds ``--streams`` open Server-Sent Event streams
(``GET /api/v1/events``, 10,000 by default) from ``--clients`` client processes (asyncio,
raw HTTP/1.1 connections on loopback). Each round starts a fresh instance and measures:

* GET production throughput (wrk, keep-alive, a read token) before any stream, with
  every stream open, and after they closed; the ratios to before are set against their
  goal (at least 0.9);
* for ``--promotions`` promotions made through the API while the streams are open: the
  time from sending the promote request until each stream has received its
  ``version.promoted`` frame (p50, p99, max over every stream and promotion; goal: p99
  under 1 s);
* the worker's threads and resident memory at each of those three points, and its
  memory growth per open stream (goal: at most 20 KiB).

The soft limit of open files is raised to fit the streams (they are descriptors in
the server and in the clients). Writes the "streams" section of docs/benchmarks.md.
The Redis db at ``--redis-url`` (default db 10) is FLUSHed before and after: give it a
db nobody else uses.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import resource
import runpy
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.http import ADMIN_SECRET, ROOT, gunicorn, seed, write_bootstrap
from bench.report import table, write_section
from bench.wrk import WrkResult, wrk
from tests.servers import Server

PRODUCTION = "/api/v1/prompts/support/production"
EVENTS = "/api/v1/events"
GOAL_RATIO = 0.9
GOAL_P99_S = 1.0
GOAL_KIB_PER_STREAM = 20
DELIVERY_TIMEOUT = 30.0  # a promotion not seen by every stream by then is a failure
OPEN_TIMEOUT = 120.0
SETTLE = 1.0  # seconds of quiet before each wrk run
WARM_UP = 2  # seconds of wrk on a new instance before its first measured run


class Holder:
    """``count`` open event streams, spread over ``processes`` client processes, each an
    asyncio loop of raw HTTP/1.1 connections (a protocol object each, reading the SSE
    frames as bytes: httpx-sse in one process would spend seconds of its own CPU on ten
    thousand frames, which would be counted as delivery time).

    :meth:`wait_for` gives, for a promoted version number, the time each stream received
    its frame (``time.time()``, one clock for every process on the machine).
    """

    def __init__(self, port: int, token: str, count: int, processes: int) -> None:
        self.count = count
        context = multiprocessing.get_context("spawn")
        shares = [count // processes + (i < count % processes) for i in range(processes)]
        self._pipes = []
        self._processes = []
        for share in shares:
            ours, theirs = context.Pipe()
            process = context.Process(target=hold, args=(theirs, port, token, share))
            process.start()
            self._pipes.append(ours)
            self._processes.append(process)

    def _ask(self, *command: object, timeout: float) -> list[Any]:
        for pipe in self._pipes:
            pipe.send(command)
        answers = []
        for pipe in self._pipes:
            if not pipe.poll(timeout):
                raise SystemExit(f"a client process did not answer {command[0]!r}")
            answers.append(pipe.recv())
        return answers

    def open(self) -> None:
        """Open every stream; returns when all answered (the server holds them then)."""
        failures = [f for answer in self._ask("open", timeout=OPEN_TIMEOUT) for f in answer]
        if failures:
            raise SystemExit(f"{len(failures)} streams failed, first: {failures[0]}")

    def still_open(self) -> int:
        return sum(self._ask("open?", timeout=10))

    def wait_for(self, version: int, timeout: float) -> list[float]:
        answers = self._ask("wait", version, timeout, timeout=timeout + 10)
        times = [t for answer in answers for t in answer]
        if len(times) < self.count:
            raise SystemExit(f"version {version} reached {len(times)} of {self.count} streams")
        return times

    def close(self) -> None:
        self._ask("close", timeout=60)
        for process in self._processes:
            process.join(10)


_VERSION = re.compile(rb"event: version\.promoted\ndata: \{[^\n]*?\"version\":(\d+)")


class _Stream(asyncio.Protocol):
    """One raw SSE connection: notes when each promotion's frame arrives."""

    def __init__(self, request: bytes, seen: dict[int, list[float]]) -> None:
        self.request = request
        self.seen = seen
        self.buffer = b""
        self.opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        received = time.time()
        self.buffer += data
        if not self.opened.done():
            if b"\r\n\r\n" not in self.buffer:
                return
            head = self.buffer.split(b"\r\n", 1)[0].decode()
            self.opened.set_result("" if " 200 " in head else head)
        # Keep only what may be the start of a frame cut in two.
        last = self.buffer.rfind(b"\n\n")
        frames, self.buffer = self.buffer[: last + 2], self.buffer[last + 2 :]
        for match in _VERSION.finditer(frames):
            self.seen.setdefault(int(match.group(1)), []).append(received)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.opened.done():
            self.opened.set_result(f"connection lost: {exc!r}")


def hold(pipe: Connection, port: int, token: str, count: int) -> None:
    """A client process: ``count`` streams, driven by commands on ``pipe``."""
    asyncio.run(_hold(pipe, port, token, count))


async def _hold(pipe: Connection, port: int, token: str, count: int) -> None:
    loop = asyncio.get_running_loop()
    request = (
        f"GET {EVENTS} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()
    seen: dict[int, list[float]] = {}
    streams: list[_Stream] = []

    async def one() -> str:
        try:
            _, stream = await loop.create_connection(
                lambda: _Stream(request, seen), "127.0.0.1", port
            )
        except OSError as exc:
            return repr(exc)
        streams.append(stream)
        return await stream.opened

    while True:
        command = await loop.run_in_executor(None, pipe.recv)
        if command[0] == "open":
            failures: list[str] = []
            for start in range(0, count, 50):  # 50 connections at a time per process
                batch = [one() for _ in range(min(50, count - start))]
                failures += [f for f in await asyncio.gather(*batch) if f]
            pipe.send(failures)
        elif command[0] == "open?":
            pipe.send(sum(not s.lost for s in streams))
        elif command[0] == "wait":
            version, timeout = command[1], command[2]
            deadline = loop.time() + timeout
            while len(seen.get(version, [])) < count and loop.time() < deadline:
                await asyncio.sleep(0.005)
            pipe.send(seen.get(version, []))
        elif command[0] == "close":
            for stream in streams:
                if stream.transport is not None:
                    stream.transport.close()
            pipe.send(None)
            return


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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Round:
    """One fresh instance: a run before any stream, one with every stream open, one
    after they closed; the worker's threads and memory at each of those points."""

    fresh: WrkResult
    with_streams: WrkResult
    after: WrkResult
    delivery_s: list[float]
    promotion_cpu_s: list[float]  # the worker's CPU time from promote to every frame
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
    holder = Holder(server.port, read_token, args.streams, args.clients)
    holder.open()
    with_streams = load()
    threads_open, rss_open = threads_and_rss(worker)
    delivery: list[float] = []
    promotion_cpu: list[float] = []
    for _ in range(args.promotions):
        version = new_version()
        cpu_before = cpu_seconds(worker)
        sent = time.time()
        api.post(f"/api/v1/prompts/support/versions/{version}/promote").raise_for_status()
        delivery += [t - sent for t in holder.wait_for(version, DELIVERY_TIMEOUT)]
        promotion_cpu.append(cpu_seconds(worker) - cpu_before)
    if holder.still_open() != args.streams:
        raise SystemExit(f"{args.streams - holder.still_open()} streams ended early")
    holder.close()
    # The stream loop hears each client leave; the run after waits until the server
    # closed every connection, so that its cleanup does not weigh on that run.
    wait_until_closed(server.port)
    after = load()
    threads_after, rss_after = threads_and_rss(worker)
    api.close()
    return Round(
        fresh,
        with_streams,
        after,
        delivery,
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
    after_verdict = "meets" if after_ratio >= GOAL_RATIO else "misses"
    p99_verdict = "meets" if p99 < GOAL_P99_S else "misses"
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
warm-up) on GET production three times: before any stream; while {args.clients} client
processes (asyncio, raw HTTP/1.1 connections on loopback) hold {args.streams:,} open
`GET /api/v1/events` streams, during which {args.promotions} promotions are made through
the API; and after the streams closed. The table shows medians over the rounds; "server
CPU" is the gunicorn processes' user+system CPU time per request; threads and memory are
the worker's, from /proc, after each run.

{table(HEADERS, rows)}

**Throughput with the streams open / before any: {ratio:.2f}** (median of the per-round
ratios {per_round}); goal at least {GOAL_RATIO}: {ratio_verdict} it.

**After the streams closed: {after_ratio:.2f} of before** (median of the per-round ratios
{after_rounds}); goal at least {GOAL_RATIO}: {after_verdict} it.

**A promotion reaches every stream: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms,
max {worst * 1000:.0f} ms** ({len(delivery):,} deliveries: {args.promotions} promotions x
{args.streams:,} streams x {args.rounds} rounds, timed from sending the promote request
to the client's receiving the frame); goal p99 under {GOAL_P99_S:g} s: {p99_verdict} it.
The worker's own CPU time from sending a promote request until every stream had its
frame (the promotion, the read of the log and {args.streams:,} frames written; the
machine's load does not change it): {fan_out_ms:.0f} ms, median over the promotions. On a
loaded machine the worker gets a share of a core, and the delivery times above stretch
with it.

**Memory: the worker grows by {per_stream:.1f} KiB per open stream** (RSS with the
streams open minus before, over {args.streams:,}; median of the rounds); goal at most
{GOAL_KIB_PER_STREAM} KiB: {memory_verdict} it.

How: an open stream holds no thread. Its request takes the client's connection from
gunicorn and gives it to the worker's stream loop (promptsvc/streaming.py), where a
coroutine serves it; one reader thread per org in the worker does the blocking read of
the org's event stream in Redis and wakes every coroutine of that loop with one call
(promptsvc/events.py). So the streams cost no thread, no Redis connection and no CPU
while nothing happens (a comment line every 14 s each), and the loop hears at once
when a client leaves.
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
        default=10_000,
        help="streams to hold, and PROMPTSVC_EVENT_STREAMS (default: %(default)s)",
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="client processes holding the streams"
    )
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--seconds", type=float, default=4, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians reported)")
    parser.add_argument("--promotions", type=int, default=5, help="promotions per round")
    parser.add_argument("--quick", action="store_true", help="2 short rounds (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.promotions = 2, 2, 2
    run(args)


if __name__ == "__main__":
    main()
