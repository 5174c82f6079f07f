"""Storage benchmark: ``python -m bench.storage [--redis-url URL] [--postgres-url URL]
[--backends memory,redis,sqlite,postgresql] [--quick]``.

Measures, on the memory backend, on the real Redis at ``--redis-url`` (default db 9,
which this bench FLUSHes before and after: give it a db nobody else uses), on a SQLite
file in a temporary directory and on the PostgreSQL database at ``--postgres-url``
(emptied before and after, bench/sqldb.py):

* ops/s and median latency of get-production, create-version and promote;
* Redis commands per read: round trips counted on the client, and EVALSHA / all
  commands from ``INFO commandstats`` deltas (server-wide: other clients of the same
  server add to them, so they are an upper bound);
* get-production (and get-latest) latency on a prompt with 10 versions, on a prompt
  with 100,000 versions, and in an org with 100,000 prompts. The three cases take
  turns in small batches so that noise from other processes hits them alike.

Prints each figure beside its goal (Redis commands per read, large/small read latency,
memory get-production latency) and writes the "storage" section of docs/benchmarks.md,
where the goals are listed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import redis
from redis.connection import AbstractConnection
from sqlalchemy import insert, select, text, update

from bench import sqldb
from bench.report import table, write_section
from storage import Prompt, Storage, new_id, rfc3339
from storage.memory import MemoryStorage
from storage.redis import RedisStorage, codec, keys, scripts
from storage.redis.core import change_args
from storage.redis.prompts import new_prompt
from storage.sql import tables
from storage.sql.storage import SqlStorage

USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
BARE = "bare write"
# The writes whose ratio to the bare write is printed.
WRITES = ("create-version", "promote")
CONTENT = "You are {{ persona }}. Answer {{ question }} in {{ language }}."
VARIABLES = ["persona", "question", "language"]


@dataclass
class Timing:
    samples_ns: list[int]
    wall_s: float

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_ns) / 1000

    @property
    def ops_per_s(self) -> float:
        return len(self.samples_ns) / self.wall_s


def timed(op: Callable[[int], object], n: int) -> Timing:
    clock = time.perf_counter_ns
    samples = []
    gc.disable()  # as timeit does: a collection would land on one unlucky sample
    try:
        start = time.perf_counter()
        for i in range(n):
            t0 = clock()
            op(i)
            samples.append(clock() - t0)
        return Timing(samples, time.perf_counter() - start)
    finally:
        gc.enable()


def sql_bulk_versions(store: SqlStorage, org: str, name: str, count: int) -> None:
    """``count`` drafts of one prompt as create_version writes them (the version rows and
    the prompt's counter), in one transaction of the storage's own, 10,000 rows per
    INSERT. No events: the event log is not what is measured."""
    now = store.clock()
    with store.db.write() as connection:
        prompt = connection.execute(
            select(tables.prompts).where(tables.prompts.c.org == org, tables.prompts.c.name == name)
        ).one()
        for start in range(prompt.counter + 1, prompt.counter + count + 1, 10_000):
            rows = [
                {
                    "org": org,
                    "prompt_id": prompt.prompt_id,
                    "version": number,
                    "version_id": new_id("v_"),
                    "content": CONTENT,
                    "variables": json.dumps(VARIABLES),
                    "status": "draft",
                    "metadata": "{}",
                    "tags": "[]",
                    "created_at": now,
                    "updated_at": now,
                    "created_by": USER,
                }
                for number in range(start, min(start + 10_000, prompt.counter + count + 1))
            ]
            connection.execute(insert(tables.versions), rows)
        last = prompt.counter + count
        connection.execute(
            update(tables.prompts)
            .where(tables.prompts.c.org == org, tables.prompts.c.prompt_id == prompt.prompt_id)
            .values(counter=last, latest_version=last, updated_at=now)
        )


def sql_bulk_prompts(store: SqlStorage, org: str, count: int) -> None:
    """``count`` empty prompts as create_prompt writes them, in one transaction."""
    now = store.clock()
    with store.db.write() as connection:
        for start in range(0, count, 10_000):
            rows = [
                {
                    "org": org,
                    "prompt_id": new_id("pmt_"),
                    "name": f"p{i:06d}",
                    "prompt_type": "text",
                    "description": None,
                    "created_at": now,
                    "updated_at": now,
                    "counter": 0,
                    "promotions": 0,
                }
                for i in range(start, min(start + 10_000, count))
            ]
            connection.execute(insert(tables.prompts), rows)


def bulk_versions(store: Storage, org: str, name: str, count: int) -> None:
    """``count`` drafts of one prompt. On Redis: the storage's own create_version script,
    pipelined 1,000 at a time, because 100,000 round trips would take minutes from Python;
    on SQL: batched INSERTs in one transaction (sql_bulk_versions). Only loading goes
    this way; every measured operation uses the public API."""
    if isinstance(store, SqlStorage):
        sql_bulk_versions(store, org, name, count)
        return
    if not isinstance(store, RedisStorage):
        for _ in range(count):
            store.create_version(org, name, CONTENT, USER, variables=VARIABLES)
        return
    # As RedisStorage.create_version passes them (no includes), the fields of a first
    # version made through the API with a new id each.
    first = store.create_version(org, name, CONTENT, USER, variables=VARIABLES)
    script, now = store._scripts["create_version"], rfc3339(first.created_at)
    event_keys, event_args = scripts.event_context(org, USER, None, now, store.event_log_size)
    for start in range(1, count, 1_000):
        pipe = store.client.pipeline(transaction=False)
        for _ in range(start, min(start + 1_000, count)):
            draft = replace(first, version_id=new_id("v_"))
            args = [name, draft.version_id, "{}", *codec.version_fields(draft), *event_args]
            script(
                keys=[keys.names(org), keys.prompt_prefix(org), *event_keys],
                args=args,
                client=pipe,
            )
        pipe.execute()


def bulk_prompts(store: Storage, org: str, count: int) -> None:
    """``count`` empty prompts; on Redis as RedisStorage.create_prompt's apply_change
    script, pipelined; on SQL batched INSERTs in one transaction."""
    if isinstance(store, SqlStorage):
        sql_bulk_prompts(store, org, count)
        return
    if not isinstance(store, RedisStorage):
        for i in range(count):
            store.create_prompt(org, f"p{i:06d}")
        return
    script, now = store._scripts["apply_change"], store.clock()
    for start in range(0, count, 1_000):
        pipe = store.client.pipeline(transaction=False)
        for i in range(start, min(start + 1_000, count)):
            prompt = Prompt(new_id("pmt_"), f"p{i:06d}", "text", None, now, now, None, None)
            script(
                keys=[keys.org_prefix(org), keys.events(org)],
                args=[*change_args(*new_prompt(prompt, USER, None)), store.event_log_size],
                client=pipe,
            )
        pipe.execute()


def prompt_with_versions(store: Storage, org: str, name: str, count: int) -> None:
    """A prompt with ``count`` versions, the newest one published."""
    store.create_prompt(org, name)
    bulk_versions(store, org, name, count)
    store.promote(org, name, str(count), USER)
    # The bulk path bypasses the public API: check it built what the public API would.
    assert store.get_production(org, name).version == count


def build(store: Storage, versions: int, prompts: int) -> dict[str, tuple[str, str]]:
    """The read cases: case -> (org, prompt name)."""
    prompt_with_versions(store, "small", "target", 10)
    prompt_with_versions(store, "bigprompt", "target", versions)
    bulk_prompts(store, "bigorg", prompts)
    assert store.get_prompt("bigorg", f"p{prompts - 1:06d}").latest_version is None
    prompt_with_versions(store, "bigorg", "target", 10)
    return {
        "10 versions": ("small", "target"),
        f"{versions:,} versions": ("bigprompt", "target"),
        f"{prompts:,} prompts in org": ("bigorg", "target"),
    }


def read_latencies(
    store: Storage, cases: dict[str, tuple[str, str]], reads: int
) -> dict[tuple[str, str], float]:
    """Median latency (us) per (read, case). The cases take turns in batches of 10 reads,
    so noise from other processes on the machine falls on all of them alike."""
    samples: dict[tuple[str, str], list[int]] = {}
    for _ in range(max(reads // 10, 1)):
        for case, (org, name) in cases.items():
            for read, call in (("production", store.get_production), ("latest", store.get_latest)):
                t = timed(lambda _i, c=call, o=org, n=name: c(o, n), 10)  # type: ignore[misc]
                samples.setdefault((read, case), []).extend(t.samples_ns)
    return {key: statistics.median(ns) / 1000 for key, ns in samples.items()}


def bare_write(store: Storage) -> Callable[[int], object] | None:
    """A bare single-row commit on the same database: one INSERT in one transaction of
    its own (SQL, bench/sqldb.py), one SET (Redis); None for memory, which commits
    nothing."""
    if isinstance(store, SqlStorage):
        sqldb.make_bare_writes(store.engine)
        return lambda _i: sqldb.bare_write(store.engine, CONTENT)
    if isinstance(store, RedisStorage):
        return lambda i: store.client.set(f"bench:bare:{i}", CONTENT)
    return None


def operations(store: Storage, n: int) -> dict[str, Timing]:
    """create-version, promote (of that version) and a bare write taking turns ``n``
    times on a fresh prompt, then get-production ``n`` times."""
    store.create_prompt("ops", "p")
    bare = bare_write(store)
    turns = {
        "create-version": lambda _i: store.create_version(
            "ops", "p", CONTENT, USER, variables=VARIABLES
        ),
        "promote": lambda i: store.promote("ops", "p", str(i + 1), USER),
    }
    if bare is not None:
        turns[BARE] = bare
    samples: dict[str, list[int]] = {name: [] for name in turns}
    for i in range(n):
        for name, op in turns.items():
            samples[name].extend(timed(lambda _i, op=op, i=i: op(i), 1).samples_ns)  # type: ignore[misc]
    # Each one's wall time is the sum of its own calls (they took turns).
    result = {name: Timing(ns, sum(ns) / 1e9) for name, ns in samples.items()}
    result["get-production"] = timed(lambda _i: store.get_production("ops", "p"), n)
    return result


def commands_per_read(store: RedisStorage, url: str, n: int) -> dict[str, float]:
    """Round trips counted on the client, and commandstats deltas from the server.

    Sends are counted where every redis-py connection sends (the client's pool and the
    storage's read lane alike), only while the reads run.
    """
    sent = 0
    original = AbstractConnection.send_packed_command

    def counting(self: AbstractConnection, *args: Any, **options: Any) -> Any:
        nonlocal sent
        sent += 1
        return original(self, *args, **options)

    admin = redis.Redis.from_url(url)

    def stats() -> dict[str, int]:
        return {k: int(v["calls"]) for k, v in admin.info("commandstats").items()}

    store.get_production("small", "target")  # the script is loaded; count steady state
    before = stats()
    AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]
    try:
        for _ in range(n):
            store.get_production("small", "target")
    finally:
        AbstractConnection.send_packed_command = original  # type: ignore[method-assign]
    after = stats()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    delta["cmdstat_info"] = delta.get("cmdstat_info", 0) - 1  # our own second INFO
    return {
        "round trips": sent / n,
        "EVALSHA": delta.get("cmdstat_evalsha", 0) / n,
        "all commands": sum(delta.values()) / n,
    }


def run_backend(
    label: str, store: Storage, args: argparse.Namespace
) -> tuple[dict[str, Timing], dict[tuple[str, str], float], float]:
    started = time.perf_counter()
    ops = operations(store, args.ops)
    cases = build(store, args.versions, args.prompts)
    built = time.perf_counter() - started
    print(f"{label}: operations and {args.versions:,}+{args.prompts:,} records in {built:.1f}s")
    if label == "postgresql":
        assert isinstance(store, SqlStorage)
        STALE_PLANS.update(read_latencies(store, cases, 200))
        analyze(store)
    return ops, read_latencies(store, cases, args.reads), built


# PostgreSQL get-production latencies right after the bulk load, before ANALYZE.
STALE_PLANS: dict[tuple[str, str], float] = {}


def analyze(store: SqlStorage) -> None:
    """What autovacuum does soon after a bulk load (its naptime is a minute): fresh
    statistics, which also make PostgreSQL plan the prepared reads again. Without them,
    the read lane's statements, prepared (psycopg does so after 5 runs) while the tables
    were nearly empty, keep the plan they got then."""
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("ANALYZE"))


BACKENDS = ("memory", "redis", "sqlite", "postgresql")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--postgres-url", default=sqldb.POSTGRES_URL)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--quick", action="store_true", help="small sizes, no docs update")
    args = parser.parse_args()
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not args.backends or set(args.backends) - set(BACKENDS):
        parser.error(f"--backends: choose among {', '.join(BACKENDS)}")
    args.versions = args.prompts = 2_000 if args.quick else 100_000
    args.ops, args.reads = (300, 600) if args.quick else (2_000, 6_000)

    load = os.getloadavg()[0]  # figures from a busy machine are slower: say how busy
    started = time.perf_counter()
    results = {}
    per_read = None
    workdir = tempfile.mkdtemp(prefix="bench-storage-")
    try:
        for backend in args.backends:
            if backend == "memory":
                results["memory"] = run_backend("memory", MemoryStorage(), args)
            elif backend == "redis":
                redis_store = RedisStorage.from_url(args.redis_url)
                redis_store.client.flushdb()
                try:
                    results["redis"] = run_backend("redis", redis_store, args)
                    per_read = commands_per_read(redis_store, args.redis_url, 1_000)
                finally:
                    redis_store.client.flushdb()
                    redis_store.close()
            else:
                if backend == "sqlite":
                    url = sqldb.sqlite_url(Path(workdir))
                else:
                    url = args.postgres_url
                    sqldb.empty_postgres(url)
                sql_store = SqlStorage.from_url(url)
                try:
                    results[backend] = run_backend(backend, sql_store, args)
                finally:
                    sql_store.close()
                    if backend == "postgresql":
                        sqldb.empty_postgres(url)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.perf_counter() - started

    body = report(results, per_read, args, elapsed, load)
    print(body)
    if not args.quick:
        command = " ".join(["python -m bench.storage", *sys.argv[1:]])
        write_section("storage", "Storage", command, body)


def report(
    results: dict[str, tuple[dict[str, Timing], dict[tuple[str, str], float], float]],
    per_read: dict[str, float] | None,
    args: argparse.Namespace,
    elapsed: float,
    load: float,
) -> str:
    op_rows: list[list[object]] = []
    for backend, (ops, _, _) in results.items():
        for op, t in ops.items():
            vs_bare = ""
            if BARE in ops and op in (*WRITES, BARE):
                vs_bare = f"{t.median_us / ops[BARE].median_us:.2f}"
            op_rows.append([backend, op, f"{t.ops_per_s:,.0f}", f"{t.median_us:.1f}", vs_bare])
    cases = list(dict.fromkeys(case for _, (_, reads, _) in results.items() for _, case in reads))
    read_rows: list[list[object]] = []
    ratios: dict[tuple[str, str], float] = {}
    for backend, (_, reads, _) in results.items():
        for read in ("production", "latest"):
            small = reads[(read, cases[0])]
            row: list[object] = [backend, f"get-{read}"]
            for case in cases:
                row.append(f"{reads[(read, case)]:.1f}")
            worst = max(reads[(read, c)] for c in cases[1:]) / small
            ratios[(backend, read)] = worst
            row.append(f"{worst:.2f}x")
            read_rows.append(row)

    targets: list[list[object]] = []
    if per_read is not None:
        inside = per_read["all commands"] - per_read["EVALSHA"]
        targets.append(
            [
                "Redis commands per read",
                "1",
                f"{per_read['round trips']:.2f} round trip on the client; server: "
                f"{per_read['EVALSHA']:.2f} EVALSHA, which runs {inside:.1f} commands inside",
                verdict(per_read["round trips"] == 1),
            ]
        )
    for (backend, read), ratio in ratios.items():
        label = f"{backend} get-{read}: large / small"
        targets.append([label, "<= 1.2x", f"{ratio:.2f}x", verdict(ratio <= 1.2)])
    if "memory" in results:
        mem_prod = results["memory"][0]["get-production"].median_us
        targets.append(
            ["memory get-production median", "< 5 us", f"{mem_prod:.2f} us", verdict(mem_prod < 5)]
        )
    built = ", ".join(f"{backend} {b:.0f} s" for backend, (_, _, b) in results.items())
    sizes = (
        f"{args.ops:,} operations of each kind, {args.reads:,} reads per case taking turns "
        f"in batches of 10, garbage collector off while timing; the {args.versions:,}-record "
        f"data sets are loaded on Redis through the storage's own scripts, pipelined, and on "
        f"SQL by batched INSERTs in one transaction (operations and loading took {built}); "
        f"whole run {elapsed:.0f} s; 1-minute load average at the start {load:.1f}"
    )
    return "\n\n".join(
        [
            f"Latencies are medians in microseconds: in-process for memory and SQLite (a "
            f"WAL file on the machine's disk), over a localhost socket for Redis and "
            f"PostgreSQL ({sizes}). ops/s is operations / wall time, so slow outliers "
            f"(other processes on the same cores) pull it below 1 / median. Writes on "
            f"SQLite and PostgreSQL are committed transactions (SQLite: synchronous=NORMAL "
            f"in WAL; PostgreSQL: the server's settings, fsync on).",
            "### Operations",
            "The writes take turns with a bare write on the same database (SQL: one "
            "INSERT of one row in one transaction of its own, on the storage's engine, "
            "bench/sqldb.py; Redis: one SET), one of each in turn, so load from other "
            'processes falls on them alike; "/ bare write" is the median of each over '
            "the bare write's median, from the same run.",
            table(["backend", "operation", "ops/s", "median us", "/ bare write"], op_rows),
            "### Read latency as data grows (median us)",
            table(["backend", "read", *cases, "worst large/small"], read_rows),
            *stale_plans(cases, args.ops),
            "### Targets",
            table(["target", "goal", "measured", ""], targets),
        ]
    )


def stale_plans(cases: list[str], ops: int) -> list[str]:
    """The PostgreSQL reads measured before ANALYZE, when there were any."""
    if not STALE_PLANS:
        return []
    figures = "; ".join(
        f"get-{read}: " + ", ".join(f"{case} {STALE_PLANS[(read, case)]:,.0f} us" for case in cases)
        for read in ("production", "latest")
    )
    return [
        "On PostgreSQL the reads above come after `ANALYZE`, which autovacuum runs soon "
        "after a bulk load. Measured right after the load, before it (200 reads per case): "
        f"{figures}. get-production had been run {ops:,} times while the tables were nearly "
        "empty (the operations above), so its prepared statement kept the plan made "
        "then (a sequential scan) until the statistics changed; get-latest, first run "
        "after the load, was planned with the data in place."
    ]


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


if __name__ == "__main__":
    main()
