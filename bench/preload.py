"""Warming the SDK's cache: ``python -m bench.preload [--prompts N] [--rounds R] [--quick]``.

On SQLite (a fresh file), N prompts (default 500) each with a production version; the
real app served by werkzeug on 127.0.0.1 in this process. One PromptClient, its token
already held, warms its cache for all N prompts in two ways, taking turns round by
round (each round starts from ``clear_cache()``):

* single reads: ``get_prompt_version(name)`` for each prompt, N requests;
* preload: ``client.preload()``, the environment read a page of up to 1,000 prompts
  per request (``GET /api/v1/environments/production/prompts``).

After each preload the bench checks that a read of every prompt is a cache hit (no
request). Target: the preload's median at most 1/20 of the single reads' median
(``TARGET_RATIO``). werkzeug closes every connection, so each request includes a TCP
connect, as in bench.sdk. Prints a table and writes the "preload" section of
docs/benchmarks.md (not with --quick).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from werkzeug.serving import make_server

from bench.report import table, write_section
from bench.sqldb import sqlite_url
from promptsvc.app import create_app
from promptsvc.client import PromptClient
from promptsvc.config import Settings
from storage.sql.storage import SqlStorage

ORG = "bench"
USER = str(uuid.uuid4())
TARGET_RATIO = 1 / 20
CONTENT = "You are {{ persona }} for prompt {n}. Answer {{ question }} in {{ language }}."


@contextmanager
def local_server(directory: Path, prompts: int) -> Iterator[tuple[str, str, str]]:
    """The app on SQLite with ``prompts`` released prompts; yields (url, key, secret)."""
    storage = SqlStorage.from_url(sqlite_url(directory))
    for n in range(prompts):
        name = f"prompt-{n:04d}"
        storage.create_prompt(ORG, name)
        version = storage.create_version(ORG, name, CONTENT.format(n=n), USER)
        storage.promote(ORG, name, version.version_id, USER)
    app = create_app(Settings(), storage=storage)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    key, secret = app.extensions["identity"].create_key(ORG, "Service Read")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", key.client_id, secret
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        storage.close()


def measure(prompts: int, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds per warming, single reads and preload, ``rounds`` of each."""
    names = [f"prompt-{n:04d}" for n in range(prompts)]
    singles: list[float] = []
    preloads: list[float] = []
    with (
        tempfile.TemporaryDirectory() as workdir,
        local_server(Path(workdir), prompts) as (
            url,
            key,
            secret,
        ),
        PromptClient(url, account_id=ORG, key_id=key, key_secret=secret) as client,
    ):
        client.get_prompt_version(names[0])  # the token, and connections warmed
        for _ in range(rounds):
            client.clear_cache()
            start = time.perf_counter()
            for name in names:
                client.get_prompt_version(name)
            singles.append(time.perf_counter() - start)

            client.clear_cache()
            start = time.perf_counter()
            client.preload()
            preloads.append(time.perf_counter() - start)
            before = client.cache_info()
            for name in names:
                client.get_prompt_version(name)
            after = client.cache_info()
            if after["misses"] != before["misses"] or after["hits"] - before["hits"] != len(names):
                raise SystemExit("a read after the preload was not a cache hit")
    return singles, preloads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds, no docs written")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    load = os.getloadavg()[0]
    singles, preloads = measure(args.prompts, rounds)
    single, preload = statistics.median(singles), statistics.median(preloads)
    ratio = preload / single
    rows = [
        [
            f"{args.prompts} single reads",
            rounds,
            f"{single * 1e3:,.1f} ms",
            f"{min(singles) * 1e3:,.1f} ms",
        ],
        [
            "preload (one environment read)",
            rounds,
            f"{preload * 1e3:,.1f} ms",
            f"{min(preloads) * 1e3:,.1f} ms",
        ],
    ]
    met = "met" if ratio <= TARGET_RATIO else "NOT met"
    body = (
        f"Load average when the run started: {load:.1f} (2 cores; other work shares them).\n\n"
        + table(["warming", "rounds", "median", "min"], rows)
        + f"\n\nTarget: warming {args.prompts} prompts with preload takes at most 1/20 of "
        f"the time of {args.prompts} single reads (SQLite, same run): **{met}** "
        f"(ratio {ratio:.3f}, 1/{1 / ratio:.0f}).\n\n"
        "One client with its token held warms its cache from empty both ways, the two "
        "taking turns round by round; after each preload a read of every prompt is "
        "checked to be a cache hit. The app runs in the same process on werkzeug "
        "(127.0.0.1, a TCP connect per request), on a fresh SQLite file."
    )
    print(body)
    if not args.quick:
        write_section(
            "preload",
            "SDK warm-up: preload vs single reads (SQLite)",
            "python -m bench.preload",
            body,
        )
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
