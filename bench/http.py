"""HTTP benchmark: ``python -m bench.http [--redis-url URL] [--postgres-url URL] [--quick]``.

GET /api/v1/prompts/{name}/production under gunicorn (the shipped gunicorn.conf.py) on
each storage of ``--storages`` (real Redis, a SQLite file, PostgreSQL), side by side
with a bare Flask endpoint (bench/http_bare.py) that returns the
same JSON via ``jsonify`` under the same gunicorn settings. The load generator is ``wrk``
(Debian package ``wrk``) on loopback, keep-alive connections, a valid bearer token on
every promptsvc request.

Measured per worker: each server runs one gthread worker (4 threads by default), so how
wrk's connections happen to spread over several workers adds no noise. The servers
take turns, round by round, so that noise from other processes on the machine hits them
alike; for each storage the median of the per-round ratios of promptsvc's requests/s to
the bare endpoint's (in the same round) is set against its goal (TARGETS). Writes the
"http" section of docs/benchmarks.md.

The Redis db at ``--redis-url`` (default db 13) is FLUSHed and the PostgreSQL database
at ``--postgres-url`` emptied (bench/sqldb.py) before and after: give them to nobody
else. The SQLite file is made in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis

from bench import sqldb
from bench.report import table, write_section
from bench.wrk import WrkResult, wrk
from storage import Storage, storage_from_url
from tests.servers import Server, bootstrap_file, free_port, gunicorn_command

ROOT = Path(__file__).resolve().parent.parent

ADMIN_SECRET = "bench-admin-secret-0123456789"
READ_SECRET = "bench-read-secret-0123456789"
CONTENT = (
    "You are {{ persona }}, a support assistant for {{ product }}. Answer the customer's "
    "question in {{ language }}, in at most {{ max_sentences }} sentences, and cite the "
    "relevant help-center article when there is one.\n\nQuestion: {{ question }}"
)
METADATA = {"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 512}
TAGS = ["support", "en", "production"]
# promptsvc / bare requests/s, median of the per-round ratios, per storage.
TARGETS = {"redis": 1.0, "sqlite": 1.0, "postgresql": 0.95}
STORAGES = tuple(TARGETS)
# An environment's read must cost what production's does: its ratio within this of it
# (measured on Redis, beside GET production on the same server).
ENVIRONMENT_TOLERANCE = 0.05
ENVIRONMENT_PATH = "/api/v1/prompts/support/environments/staging"
# Composition (docs/composition.md): CONTENT made of three included prompts. A read of it
# may cost at most INCLUDES_GOAL times GET production of `support` on the same server.
INCLUDED = {
    "support-role": "You are {{ persona }}, a support assistant for {{ product }}.",
    "support-language": (
        "Answer the customer's question in {{ language }}, in at most {{ max_sentences }} "
        "sentences,"
    ),
    "support-sources": "and cite the relevant help-center article when there is one.",
}
COMPOSED = (
    "{{> support-role}} {{> support-language}} {{> support-sources}}\n\nQuestion: {{ question }}"
)
COMPOSED_PATH = "/api/v1/prompts/composed/production"
INCLUDES_GOAL = 1.3
INCLUDES_STORAGES = ("redis", "sqlite")


def gunicorn(app: str, env: dict[str, str]) -> Server:
    """``gunicorn -c gunicorn.conf.py <app>`` on a free loopback port (not started)."""
    port = free_port()
    return Server(gunicorn_command("--bind", f"127.0.0.1:{port}", app), port, env)


def token(http: httpx.Client, key_id: str, secret: str) -> str:
    r = http.post(
        "/v1/auth/sdk-token",
        json={"account_id": "bench", "key_id": key_id, "key_secret": secret},
    )
    r.raise_for_status()
    value: str = r.json()["access_token"]
    return value


def seed(api: str) -> tuple[str, bytes]:
    """Create the prompt through the API; return a read token and the production body."""
    with httpx.Client(base_url=api, timeout=10) as http:
        admin = {"Authorization": f"Bearer {token(http, 'bench-admin', ADMIN_SECRET)}"}
        http.post("/api/v1/prompts", json={"name": "support"}, headers=admin).raise_for_status()
        for _ in range(3):  # a few versions, the newest promoted
            created = http.post(
                "/api/v1/prompts/support/versions",
                json={"content": CONTENT, "metadata": METADATA, "tags": TAGS},
                headers=admin,
            )
            created.raise_for_status()
        http.post(
            "/api/v1/prompts/support/versions/3/promote",
            json={"notes": "benchmark"},
            headers=admin,
        ).raise_for_status()
        # The same version in staging: the environment read answers the same body.
        http.post("/api/v1/environments", json={"name": "staging"}, headers=admin)
        http.post(
            "/api/v1/prompts/support/versions/3/promote",
            json={"environment": "staging"},
            headers=admin,
        ).raise_for_status()
        read = token(http, "bench-read", READ_SECRET)
        body = http.get(
            "/api/v1/prompts/support/production", headers={"Authorization": f"Bearer {read}"}
        )
        body.raise_for_status()
        return read, body.content


def seed_composed(api: str) -> str:
    """The prompt ``composed``, CONTENT made of three included prompts, all in
    production; returns its resolved content."""
    with httpx.Client(base_url=api, timeout=10) as http:
        admin = {"Authorization": f"Bearer {token(http, 'bench-admin', ADMIN_SECRET)}"}
        for name, content in (*INCLUDED.items(), ("composed", COMPOSED)):
            http.post("/api/v1/prompts", json={"name": name}, headers=admin).raise_for_status()
            made = http.post(
                f"/api/v1/prompts/{name}/versions",
                json={"content": content, "metadata": METADATA, "tags": TAGS},
                headers=admin,
            )
            made.raise_for_status()
            http.post(
                f"/api/v1/prompts/{name}/versions/1/promote", json={}, headers=admin
            ).raise_for_status()
        read = {"Authorization": f"Bearer {token(http, 'bench-read', READ_SECRET)}"}
        answer = http.get(COMPOSED_PATH, headers=read)
        answer.raise_for_status()
        resolved: str = answer.json()["content"]
        return resolved


@dataclass
class ReadCost:
    """One call from Python, measured in-process: client CPU and wall time (us)."""

    cpu_us: float
    wall_us: float


def measure(call: Callable[[], object], calls: int = 2000) -> ReadCost:
    call()  # connections made, statements prepared: steady state
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        call()
    return ReadCost(
        (time.process_time() - cpu) / calls * 1e6, (time.perf_counter() - wall) / calls * 1e6
    )


def read_costs(urls: dict[str, str]) -> dict[str, ReadCost]:
    """What ``get_production`` costs the calling process on each storage, and a Redis
    PING through redis-py (key "redis ping")."""
    costs = {}
    for name, url in urls.items():
        storage: Storage = storage_from_url(url)
        try:
            costs[name] = measure(lambda s=storage: s.get_production("bench", "support"))  # type: ignore[misc]
        finally:
            storage.close()
    if "redis" in urls:
        client = redis.Redis.from_url(urls["redis"])
        try:
            costs["redis ping"] = measure(client.ping)
        finally:
            client.close()
    return costs


def write_bootstrap(directory: Path) -> Path:
    """The bootstrap file both benchmarks start promptsvc with: org bench, two keys."""
    keys = {
        "bench-admin": (ADMIN_SECRET, "Service Admin"),
        "bench-read": (READ_SECRET, "Service Read"),
    }
    return bootstrap_file(directory, {"bench": keys})


def storage_urls(args: argparse.Namespace, workdir: Path) -> dict[str, str]:
    """The storage URL of each storage the run measures, emptied."""
    urls = {}
    for name in args.storages:
        if name == "redis":
            redis.Redis.from_url(args.redis_url).flushdb()
            urls[name] = args.redis_url
        elif name == "sqlite":
            urls[name] = sqldb.sqlite_url(workdir)
        else:
            sqldb.empty_postgres(args.postgres_url)
            urls[name] = args.postgres_url
    return urls


def run(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise SystemExit("bench.http needs wrk: apt-get install -y wrk (Debian/Ubuntu)")
    workdir = Path(tempfile.mkdtemp(prefix="bench-http-"))
    urls = storage_urls(args, workdir)
    bootstrap = write_bootstrap(workdir)
    body_file = workdir / "body.json"
    env = {
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_WORKERS": str(args.workers),
        "PROMPTSVC_THREADS": str(args.threads),
        # No threads for event streams (gunicorn.conf.py adds them to PROMPTSVC_THREADS):
        # every server answers with exactly --threads threads.
        "PROMPTSVC_EVENT_STREAMS": "0",
        "BENCH_HTTP_BODY": str(body_file),
    }
    path = "/api/v1/prompts/support/production"
    servers: list[Server] = []
    targets: dict[str, tuple[str, str | None, int]] = {}
    try:
        body = b""
        for name, url in urls.items():
            api = gunicorn("wsgi:app", {**env, "PROMPTSVC_STORAGE_URL": url})
            servers.append(api)
            api.start("/healthz")
            token, body = seed(api.base_url)
            assert api.process is not None
            targets[name] = (api.base_url + path, token, api.process.pid)
            if name in INCLUDES_STORAGES:
                assert seed_composed(api.base_url) == CONTENT, "the same text, composed"
                targets[f"{name} includes"] = (
                    api.base_url + COMPOSED_PATH,
                    token,
                    api.process.pid,
                )
            if name == "redis":
                staged = httpx.get(
                    api.base_url + ENVIRONMENT_PATH, headers={"Authorization": f"Bearer {token}"}
                )
                assert staged.content == body, "the environment read must answer the same body"
                targets["environment"] = (
                    api.base_url + ENVIRONMENT_PATH,
                    token,
                    api.process.pid,
                )
        body_file.write_bytes(body)
        bare = gunicorn("bench.http_bare:app", env)
        servers.append(bare)
        bare.start(path)
        bare_body = httpx.get(bare.base_url + path).json()
        assert bare_body == json.loads(body), "both servers must answer the same JSON"
        assert bare.process is not None
        targets = {"bare": (bare.base_url + path, None, bare.process.pid), **targets}

        for url, auth, pid in targets.values():  # warm-up: imports, connection pools
            wrk(url, 2, args.connections, args.wrk_threads, auth, pid)
        results: dict[str, list[WrkResult]] = {name: [] for name in targets}
        for _ in range(args.rounds):
            for name, (url, auth, pid) in targets.items():
                results[name].append(
                    wrk(url, args.seconds, args.connections, args.wrk_threads, auth, pid)
                )
        load = os.getloadavg()[0]
        costs = read_costs(urls)
    finally:
        for server in servers:
            server.stop()
        if "redis" in urls:
            redis.Redis.from_url(args.redis_url).flushdb()
        if "postgresql" in urls:
            sqldb.empty_postgres(args.postgres_url)
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, results, len(body), costs, load)


LABELS = {
    "bare": "bare Flask + jsonify (no auth, no storage)",
    "redis": "promptsvc GET production, Redis (JWT + Redis read)",
    "sqlite": "promptsvc GET production, SQLite (JWT + SELECT on a WAL file)",
    "postgresql": "promptsvc GET production, PostgreSQL (JWT + SELECT over loopback TCP)",
    "environment": "promptsvc GET environments/staging, Redis (JWT + Redis read)",
    "redis includes": "promptsvc GET production of a prompt with 3 includes, Redis",
    "sqlite includes": "promptsvc GET production of a prompt with 3 includes, SQLite",
}
VERDICT_HEADERS = [
    "storage",
    "goal (promptsvc / bare)",
    "median of per-round ratios",
    "",
    "server CPU per request, bare / promptsvc",
]
READS = {
    "redis": "one EVALSHA",
    "sqlite": (
        "one SELECT (the read lane, storage/sql/read_lane.py), made again only after a "
        "commit (storage/sql/wal_watch.py)"
    ),
    "postgresql": "one SELECT (the read lane, storage/sql/read_lane.py)",
}


def report(
    args: argparse.Namespace,
    results: dict[str, list[WrkResult]],
    size: int,
    costs: dict[str, ReadCost],
    load: float,
) -> None:
    def median(name: str, attribute: str) -> float:
        return statistics.median(getattr(r, attribute) for r in results[name])

    rows = [
        [
            LABELS[name],
            f"{median(name, 'requests_per_s'):,.0f}",
            f"{median(name, 'p50_ms'):.2f}",
            f"{median(name, 'p99_ms'):.2f}",
            f"{median(name, 'cpu_us_per_request'):.0f}",
            sum(r.errors for r in results[name]),
        ]
        for name in results
    ]
    storages = [name for name in results if name in TARGETS]
    verdicts: list[list[object]] = []
    ratios: dict[str, float] = {}
    per_round: list[str] = []
    for name in storages:
        round_ratios = [
            p.requests_per_s / b.requests_per_s
            for b, p in zip(results["bare"], results[name], strict=True)
        ]
        ratios[name] = statistics.median(round_ratios)
        cpu_ratio = median("bare", "cpu_us_per_request") / median(name, "cpu_us_per_request")
        verdicts.append(
            [
                name,
                f">= {TARGETS[name]}",
                f"**{ratios[name]:.2f}**",
                "met" if ratios[name] >= TARGETS[name] else "MISSED",
                f"{cpu_ratio:.2f}",
            ]
        )
        per_round.append(f"{name}: " + ", ".join(f"{r:.2f}" for r in round_ratios))
    environment = ""
    if "environment" in results:
        env_ratio = statistics.median(
            p.requests_per_s / b.requests_per_s
            for b, p in zip(results["bare"], results["environment"], strict=True)
        )
        within = abs(env_ratio - ratios["redis"]) <= ENVIRONMENT_TOLERANCE
        env_cpu = median("environment", "cpu_us_per_request") / median(
            "redis", "cpu_us_per_request"
        )
        environment = (
            f"\n**Environment read / bare, requests/s: {env_ratio:.2f}**, against GET "
            f"production's {ratios['redis']:.2f} on the same Redis server: "
            f"{'within' if within else 'outside'} the tolerance of {ENVIRONMENT_TOLERANCE}. "
            f"Server CPU per request, environment / production: {env_cpu:.2f} (this does not "
            "depend on the load the machine's other work puts on each round). Both reads "
            "take the same path (promptsvc/api/reads.py) and answer the same body.\n"
        )
    composed = _includes_verdicts(results, median)
    rounds_rps = "; ".join(
        f"{name}: " + ", ".join(f"{r.requests_per_s:,.0f}" for r in results[name])
        for name in results
    )
    cost_rows: list[list[object]] = [
        [
            "Redis PING through redis-py" if name == "redis ping" else f"{name} get_production",
            f"{cost.cpu_us:.0f}",
            f"{cost.wall_us:.0f}",
        ]
        for name, cost in costs.items()
    ]
    reads = "; ".join(f"{name}: {READS[name]}" for name in storages)
    body = f"""
Load average when the run finished: {load:.1f} (2 cores; wrk, Redis, PostgreSQL, the
servers and any other work on the machine share them).

Measured per worker: every app runs under `gunicorn -c gunicorn.conf.py` with the same
settings, {args.workers} gthread worker(s) x {args.threads} threads, keep-alive, one
server per storage beside the bare one. wrk: {args.wrk_threads} thread(s),
{args.connections} connections, {args.seconds:g} s per run, {args.rounds} rounds, the
servers taking turns in each round after a 2 s warm-up. The body is {size} bytes of JSON
(a PromptVersion with metadata and tags). promptsvc checks an RS256 bearer token
(verified once, then cached until it expires) and reads its storage on every request;
the read endpoints are answered by promptsvc/api/reads.py, before Flask's dispatch, in
every case. "server CPU" is the user+system CPU time of the gunicorn master and worker
per request (the Redis or PostgreSQL server's own time not included; SQLite runs inside
the worker, so its time is). The SQLite file is on the machine's disk, in WAL mode;
PostgreSQL is the machine's server, over loopback TCP.

{table(["endpoint", "requests/s", "p50 ms", "p99 ms", "server CPU us/req", "errors"], rows)}

{table(VERDICT_HEADERS, verdicts)}
{environment}{composed}
Per-round ratios of requests/s, promptsvc / bare of the same round: {"; ".join(per_round)}.
Requests/s per round, {rounds_rps}. The first table shows medians over the rounds.

What each side pays per request: all run gunicorn's request machinery. The bare
endpoint adds Flask's (request and app contexts, routing, hooks, signals, Response
objects) and `jsonify`. promptsvc adds its request id, a routing answer remembered per
path, the remembered token, the storage read ({reads}) and the reuse of the decoded
version and of its JSON body and ETag while the stored version is unchanged. The read
is then its main cost; measured in-process on this machine after the run (calling
process only; the database server's CPU comes on top for Redis and PostgreSQL):

{table(["call", "CPU us", "wall us"], cost_rows)}
"""
    print(body)
    command = " ".join(["python -m bench.http", *sys.argv[1:]])
    write_section(
        "http", "HTTP: GET production under gunicorn vs a bare Flask endpoint", command, body
    )


def _includes_verdicts(
    results: dict[str, list[WrkResult]], median: Callable[[str, str], float]
) -> str:
    """The composed read against GET production of the same text on the same server:
    the cost per request (the inverse of requests/s per worker) and the server CPU."""
    rows: list[list[object]] = []
    for name in INCLUDES_STORAGES:
        if f"{name} includes" not in results:
            continue
        cost = statistics.median(
            p.requests_per_s / c.requests_per_s
            for p, c in zip(results[name], results[f"{name} includes"], strict=True)
        )
        cpu = median(f"{name} includes", "cpu_us_per_request") / median(name, "cpu_us_per_request")
        verdict = "met" if cost <= INCLUDES_GOAL else "MISSED"
        rows.append([name, f"<= {INCLUDES_GOAL}", f"**{cost:.2f}**", verdict, f"{cpu:.2f}"])
    if not rows:
        return ""
    headers = ["storage", "goal", "cost per request, 3 includes / none", "", "server CPU, same"]
    return f"""
A prompt with 3 includes (docs/composition.md), whose resolved text is the `support`
prompt's, read from the same server in the same round; its cost per request is the
median of the per-round ratios of requests/s, GET production of `support` / of the
composed prompt:

{table(headers, rows)}
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.http", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("PROMPTSVC_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13"),
        help="Redis db to use; it is FLUSHed (default: %(default)s)",
    )
    parser.add_argument(
        "--postgres-url",
        default=sqldb.POSTGRES_URL,
        help="PostgreSQL database to use; it is emptied (default: %(default)s)",
    )
    parser.add_argument(
        "--storages",
        default=",".join(STORAGES),
        help="storages to measure, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="gunicorn workers per side (%(default)s)"
    )
    parser.add_argument("--threads", type=int, default=4, help="threads per worker (%(default)s)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--seconds", type=float, default=3, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=9, help="rounds (medians reported)")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2 s (smoke test)")
    args = parser.parse_args()
    args.storages = [name.strip() for name in args.storages.split(",") if name.strip()]
    unknown = set(args.storages) - set(STORAGES)
    if unknown or not args.storages:
        parser.error(f"--storages: choose among {', '.join(STORAGES)}")
    if args.quick:
        args.rounds, args.seconds = 2, 2
    run(args)


if __name__ == "__main__":
    main()
