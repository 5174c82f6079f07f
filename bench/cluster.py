"""Cluster benchmark: ``python -m bench.cluster [--quick]``.

Starts its own servers on free loopback ports (nothing shared with 6379): one standalone
``redis-server`` and a 3-primary Redis Cluster (tests/cluster_support.py), both without
persistence, and measures in one run:

* storage read latency: get-production (the read the goal is about), get-latest and
  get-version through RedisStorage on the single server and ClusterStorage on the
  cluster, for three orgs (one per shard), the two backends taking turns in batches of
  10 reads;
* HTTP throughput of GET /api/v1/prompts/{name}/production: one ``gunicorn wsgi:app``
  instance on the single Redis, one on the cluster, and two instances (two "hosts")
  sharing the cluster, loaded at the same time; ``wrk`` and bench.http's seed and
  parsing, rounds taking turns, medians reported. Twice: every instance free to use
  every core, then each pinned to a core of its own (two hosts of one core each).

Prints each figure beside its goal (the goals are constants here) and writes the
"cluster" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.http import seed, write_bootstrap
from bench.report import table, write_section
from bench.wrk import WrkResult, pin_tree, wrk
from storage import Storage
from storage.redis import RedisStorage, keys
from storage.redis.cluster import ClusterStorage
from tests.cluster_support import Gunicorn, LocalCluster, LocalRedis, free_ports

ROOT = Path(__file__).resolve().parent.parent

USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
CONTENT = "You are {{ persona }}. Answer {{ question }} in {{ language }}."
VARIABLES = ["persona", "question", "language"]
COMMAND = "python -m bench.cluster"
READS = ("get-production", "get-latest", "get-version")


def orgs_on_every_shard(cluster: LocalCluster) -> list[str]:
    found: dict[int, str] = {}
    for i in range(1000):
        org = f"org-{i}"
        found.setdefault(cluster.node_for_slot(cluster.keyslot(keys.names(org))).port, org)
        if len(found) == cluster.primaries:
            return list(found.values())
    raise RuntimeError("no org hashes to some primary")


def seed_storage(store: Storage, orgs: list[str]) -> dict[str, str]:
    """Per org a prompt of 10 versions, version 5 in production; org -> version 7's id."""
    ids = {}
    for org in orgs:
        store.create_prompt(org, "greeting")
        made = [
            store.create_version(org, "greeting", CONTENT, USER, variables=VARIABLES)
            for _ in range(10)
        ]
        store.promote(org, "greeting", "5", USER)
        ids[org] = made[6].version_id
    return ids


def storage_latencies(
    stores: dict[str, Storage], orgs: list[str], reads: int
) -> dict[tuple[str, str], list[int]]:
    """Nanosecond samples per (backend, read). Backends, reads and orgs take turns in
    batches of 10, so noise from other processes falls on all of them alike."""
    ids = {name: seed_storage(store, orgs) for name, store in stores.items()}
    samples: dict[tuple[str, str], list[int]] = {}
    clock = time.perf_counter_ns
    rounds = max(reads // (10 * len(orgs)), 1)
    gc.disable()  # as timeit does: a collection would land on one unlucky sample
    try:
        for _ in range(rounds):
            for name, store in stores.items():
                calls: dict[str, Callable[[str], object]] = {
                    "get-production": lambda o, s=store: s.get_production(o, "greeting"),
                    "get-latest": lambda o, s=store: s.get_latest(o, "greeting"),
                    "get-version": lambda o, s=store, n=name: s.get_version(
                        o, "greeting", ids[n][o]
                    ),
                }
                for read, call in calls.items():
                    bucket = samples.setdefault((name, read), [])
                    for org in orgs:
                        for _ in range(10):
                            t0 = clock()
                            call(org)
                            bucket.append(clock() - t0)
    finally:
        gc.enable()
    return samples


def percentile(ns: list[int], q: float) -> float:
    ordered = sorted(ns)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)] / 1000


def storage_section(samples: dict[tuple[str, str], list[int]], reads: int) -> tuple[str, float]:
    rows: list[list[object]] = []
    ratio = 0.0
    for read in READS:
        single, cluster = samples[("single", read)], samples[("cluster", read)]
        r = statistics.median(cluster) / statistics.median(single)
        if read == "get-production":
            ratio = r
        for name, ns in (("single Redis", single), ("3-primary cluster", cluster)):
            rows.append(
                [
                    read,
                    name,
                    f"{statistics.median(ns) / 1000:.1f}",
                    f"{percentile(ns, 0.9):.1f}",
                    f"{percentile(ns, 0.99):.1f}",
                ]
            )
        rows.append([read, "**cluster / single**", f"**{r:.2f}x**", "", ""])
    text = (
        f"{reads:,} reads per backend and kind, over 3 orgs (on the cluster one per shard), "
        "one client thread, loopback TCP, microseconds.\n\n"
        + table(["read", "backend", "median", "p90", "p99"], rows)
    )
    return text, ratio


# --------------------------------------------------------------------------- HTTP


Target = tuple[str, str, int]  # URL, bearer token, pid of the gunicorn master serving it


def load(targets: list[Target], seconds: float, connections: int) -> list[WrkResult]:
    """One wrk per target, all at the same time; ``connections`` split between them."""
    each = max(connections // len(targets), 1)
    with ThreadPoolExecutor(len(targets)) as pool:
        runs = [pool.submit(wrk, url, seconds, each, 1, token, pid) for url, token, pid in targets]
        return [run.result() for run in runs]


# Where each instance may run: on every core, or on one core each, as on its own host.
PLACEMENTS = ("shared cores", "one core per instance")
SETUPS = ("1 instance, single Redis", "1 instance, cluster", "2 instances, cluster")


def place(pids: list[int], placement: str) -> None:
    """``pids``: the single-Redis instance, cluster instance A, cluster instance B."""
    every = set(range(os.cpu_count() or 1))
    for index, pid in enumerate(pids):
        own = {max(index - 1, 0) % len(every)}  # single and A on core 0, B on core 1
        pin_tree(pid, every if placement == PLACEMENTS[0] else own)


def http_figures(
    single: LocalRedis, cluster: LocalCluster, args: argparse.Namespace
) -> dict[tuple[str, str], list[list[WrkResult]]]:
    """Per (placement, setup): a list of rounds, each the wrk results of its instances."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    bootstrap = write_bootstrap(workdir)

    def instance(storage_url: str) -> Gunicorn:
        env = {
            "PROMPTSVC_STORAGE_URL": storage_url,
            "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
            "PROMPTSVC_ISSUER_URL": "http://promptsvc.bench",  # one public URL for all
        }
        return Gunicorn(free_ports(1)[0], env, workers=args.workers, threads=args.threads)

    servers = [instance(single.url), instance(cluster.url), instance(cluster.url)]
    path = "/api/v1/prompts/support/production"
    try:
        for server in servers:
            server.start()
        single_token, _ = seed(servers[0].base_url)
        cluster_token, _ = seed(servers[1].base_url)  # the second host shares it
        s, a, b = (
            (srv.base_url + path, token, srv.process.pid if srv.process else 0)
            for srv, token in zip(
                servers, (single_token, cluster_token, cluster_token), strict=True
            )
        )
        configs = dict(zip(SETUPS, ([s], [a], [a, b]), strict=True))
        results: dict[tuple[str, str], list[list[WrkResult]]] = {}
        for placement in PLACEMENTS:
            place([s[2], a[2], b[2]], placement)
            for targets in configs.values():  # warm-up: imports, pools, token caches
                load(targets, 2, args.connections)
            for _ in range(args.rounds):
                for name, targets in configs.items():
                    results.setdefault((placement, name), []).append(
                        load(targets, args.seconds, args.connections)
                    )
        return results
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def http_section(
    results: dict[tuple[str, str], list[list[WrkResult]]], args: argparse.Namespace
) -> tuple[str, dict[str, float]]:
    """The HTTP table, and 2 instances / 1 instance on the cluster per placement."""
    total = {
        key: [sum(r.requests_per_s for r in run) for run in runs] for key, runs in results.items()
    }
    rows: list[list[object]] = []
    for (placement, name), runs in results.items():
        done = [r for run in runs for r in run]
        cpu_per_request = sum(r.cpu_s for r in done) / sum(r.requests for r in done) * 1e6
        rows.append(
            [
                placement,
                name,
                f"{statistics.median(total[placement, name]):,.0f}",
                f"{statistics.median(r.p50_ms for r in done):.2f}",
                f"{statistics.median(r.p99_ms for r in done):.2f}",
                f"{cpu_per_request:,.0f}",
                sum(r.errors for r in done),
            ]
        )
    scale: dict[str, float] = {}
    ratios = []
    for placement in PLACEMENTS:
        one, two = total[placement, SETUPS[1]], total[placement, SETUPS[2]]
        scale[placement] = statistics.median(two) / statistics.median(one)
        per_round = ", ".join(f"{t / o:.2f}" for o, t in zip(one, two, strict=True))
        ratios.append(f"{placement}: **{scale[placement]:.2f}x** (per round: {per_round})")
    instance = f"{args.workers} workers x {args.threads} threads (gthread)"
    text = (
        f"Each instance: `gunicorn -c gunicorn.conf.py wsgi:app`, {instance}. wrk: "
        f"{args.connections} connections in all (split evenly between the instances when "
        f"there are two, one wrk per instance running at the same time), {args.seconds:g} s "
        f"per run, {args.rounds} rounds taking turns after a 2 s warm-up; medians over the "
        "rounds. Every request carries a bearer token minted by the first cluster "
        "instance, so the second one verifies tokens it did not issue. Server CPU is the "
        "user + system time of the gunicorn processes (master and workers) per request "
        "served, all runs together.\n\n"
        "Two placements, the same servers: **shared cores** lets every instance run on "
        "every core; **one core per instance** pins each instance (master, workers and "
        "their threads, with `sched_setaffinity`) to a core of its own: the single-Redis "
        "instance and cluster instance A on core 0, instance B on core 1, as two hosts "
        "with one core each. wrk and the Redis servers are not pinned, so in the "
        "two-instance runs they take CPU from both instances' cores, while a single "
        "instance leaves them core 1: a handicap for two instances, not a help.\n\n"
        + table(
            [
                "placement",
                "setup",
                "requests/s",
                "p50 ms",
                "p99 ms",
                "server CPU us/request",
                "errors",
            ],
            rows,
        )
        + "\n\n2 instances / 1 instance on the cluster: "
        + "; ".join(ratios)
        + "."
    )
    return text, scale


def main() -> None:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=6000, help="reads per backend and kind")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per instance")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections in all")
    parser.add_argument("--seconds", type=float, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (median reported)")
    parser.add_argument("--quick", action="store_true", help="a short smoke run, no docs update")
    args = parser.parse_args()
    if args.quick:
        args.reads, args.rounds, args.seconds = 600, 1, 2
    if shutil.which("wrk") is None:
        raise SystemExit(f"{COMMAND} needs wrk: apt-get install -y wrk (Debian/Ubuntu)")

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with LocalRedis() as single, LocalCluster(primaries=3) as cluster:
        stores: dict[str, Storage] = {
            "single": RedisStorage.from_url(single.url),
            "cluster": ClusterStorage.from_url(cluster.url),
        }
        try:
            orgs = orgs_on_every_shard(cluster)
            samples = storage_latencies(stores, orgs, args.reads)
        finally:
            for store in stores.values():
                store.close()
        cluster.flush()
        http = http_figures(single, cluster, args)
    elapsed = time.perf_counter() - started

    storage_text, read_ratio = storage_section(samples, args.reads)
    http_text, scale = http_section(http, args)
    hosts = scale[PLACEMENTS[1]]
    targets = table(
        ["target", "goal", "measured", ""],
        [
            ["cluster get-production median / single Redis", "<= 1.3x", f"{read_ratio:.2f}x",
             "met" if read_ratio <= 1.3 else "MISSED"],
            [f"2 instances / 1 instance requests/s (cluster, {PLACEMENTS[1]})", ">= 1.6x",
             f"{hosts:.2f}x", "met" if hosts >= 1.6 else "MISSED"],
        ],
    )  # fmt: skip
    body = f"""
**Setup: one machine with {os.cpu_count()} cores** for the load generator (wrk), every
gunicorn worker (2 instances x {args.workers} workers when two run), the single Redis
and the three cluster primaries (all on loopback, no persistence). 1-minute load
average {load_before:.1f} at the start; whole run {elapsed:.0f} s. The two-instance
figure asks what a second host adds. A second instance on the same cores adds
processes, not CPU: with every instance free to use every core, two instances measure
how the same cores are shared ({scale[PLACEMENTS[0]]:.2f}x). So the runs are made again
with each instance pinned to a core of its own, as a host with one core would be (the
target row). Even so the second "host" is not a whole one here: wrk and the four Redis
servers run on the same two cores, and with one instance they have core 1 nearly to
themselves, with two they take their share from both instances' cores. Two instances
share nothing but the cluster, so a second host with its own cores, and the load
generator elsewhere, adds capacity in proportion to its CPUs as long as the cluster
keeps up.

### Storage reads: single Redis vs 3-primary cluster

{storage_text}

### HTTP: one vs two gunicorn instances on the cluster

{http_text}

### Targets

{targets}
"""
    print(body)
    if not args.quick:
        write_section("cluster", "Redis Cluster: single Redis vs cluster, one vs two hosts",
                      " ".join([COMMAND, *sys.argv[1:]]), body)  # fmt: skip


if __name__ == "__main__":
    main()
