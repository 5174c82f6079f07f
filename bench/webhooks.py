"""Webhook delivery benchmark: ``python -m bench.webhooks [--redis-url URL] [--quick]``.

``--promotions`` promotions (1,000 by default) are made in a burst on real Redis, with
three webhooks subscribed to ``version.promoted``, each a real receiver on loopback
(``http.server``, threaded). ``--workers`` ``promptsvc worker`` processes (2 by default)
deliver them. Measured: whether every event reached every webhook (none lost, and how
many duplicates), and the delivery lag, from the event's ``at`` (written in the
promotion's atomic step) to the receiver having read the request (p50, p99, max).
Writes the "webhooks" section of docs/benchmarks.md. The Redis db at ``--redis-url``
(default db 10) is FLUSHed before and after: give it a db nobody else uses.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import redis

from bench.report import table, write_section
from promptsvc.webhooks.subscriptions import create_webhook
from storage.redis import RedisStorage

ORG = "bench"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
WEBHOOKS = 3
COMMAND = "python -m bench.webhooks"


class Receiver:
    """Records (webhook-id, lag in seconds) for every request; answers 204."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float]] = []
        lock = threading.Lock()
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                now = time.time()
                at = datetime.fromisoformat(json.loads(body)["at"]).timestamp()
                with lock:
                    seen.append((self.headers["webhook-id"], now - at))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(args: argparse.Namespace) -> None:
    redis.Redis.from_url(args.redis_url).flushdb()
    storage = RedisStorage.from_url(args.redis_url)
    receivers = [Receiver() for _ in range(WEBHOOKS)]
    for receiver in receivers:
        create_webhook(storage, ORG, receiver.url, ["version.promoted"], None, allow_private=True)
    storage.create_prompt(ORG, "bench", actor=USER)
    for n in range(args.promotions):
        storage.create_version(ORG, "bench", f"version {n}", USER)
    env = {**os.environ, "PROMPTSVC_WEBHOOK_ALLOW_PRIVATE": "1"}
    command = [sys.executable, "-m", "promptsvc.cli", "worker", "--storage", args.redis_url]
    workers = [
        subprocess.Popen(
            [*command, "--concurrency", str(args.concurrency)], env=env, stdout=subprocess.DEVNULL
        )
        for _ in range(args.workers)
    ]
    try:
        time.sleep(1.0)  # the workers are up and polling
        expected = args.promotions * WEBHOOKS
        started = time.monotonic()
        for n in range(1, args.promotions + 1):
            storage.promote(ORG, "bench", str(n), USER)
        burst = time.monotonic() - started
        deadline = started + args.timeout
        while sum(len(r.seen) for r in receivers) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
        drained = time.monotonic() - started
        time.sleep(2.0)  # duplicates would arrive meanwhile
    finally:
        for proc in workers:
            proc.terminate()
        for proc in workers:
            proc.wait(30)
        storage.close()
        redis.Redis.from_url(args.redis_url).flushdb()
    lags: list[float] = []
    distinct = duplicates = 0
    for receiver in receivers:
        ids = [message for message, _ in receiver.seen]
        distinct += len(set(ids))
        duplicates += len(ids) - len(set(ids))
        lags += [lag for _, lag in receiver.seen]
        receiver.server.shutdown()
    lost = expected - distinct
    rows = [
        [
            f"{args.promotions:,}",
            WEBHOOKS,
            args.workers,
            f"{burst:.2f}",
            f"{distinct:,} / {expected:,}",
            lost,
            duplicates,
            f"{statistics.median(lags) * 1000:.0f}",
            f"{percentile(lags, 0.99) * 1000:.0f}",
            f"{max(lags) * 1000:.0f}",
            f"{drained:.2f}",
            f"{distinct / drained:,.0f}",
        ]
    ]
    headers = [
        "promotions",
        "webhooks",
        "workers",
        "burst (s)",
        "delivered",
        "lost",
        "duplicates",
        "lag p50 (ms)",
        "lag p99 (ms)",
        "lag max (ms)",
        "all delivered after (s)",
        "deliveries/s",
    ]
    verdict = "every event reached every webhook" if lost == 0 else f"{lost} deliveries LOST"
    body = f"""\
{args.promotions:,} promotions of one prompt made in a burst straight on Redis storage
(one thread), with {WEBHOOKS} webhooks subscribed to `version.promoted`, each a threaded
`http.server` receiver on loopback answering 204. {args.workers} `promptsvc worker`
processes (`--concurrency {args.concurrency}`) deliver, signing each message. Lag: from
the event's `at` (the promotion's atomic step) to the receiver having read the request.

{table(headers, rows)}

**{verdict}; delivery lag p99 {percentile(lags, 0.99) * 1000:.0f} ms.** The lag of a
burst is mostly queueing: the workers send {args.workers * args.concurrency} requests
at a time, so the last promotions of the burst wait for the ones before them.
"""
    print(body)
    if not args.quick:
        write_section("webhooks", "Webhooks: 1,000 promotions to 3 webhooks", COMMAND, body)


def main() -> None:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("PROMPTSVC_BENCH_REDIS_URL", "redis://127.0.0.1:6379/10"),
        help="Redis db to use; it is FLUSHed (default: %(default)s)",
    )
    parser.add_argument("--promotions", type=int, default=1000, help="(default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (%(default)s)")
    parser.add_argument(
        "--concurrency", type=int, default=8, help="deliveries in flight per worker (%(default)s)"
    )
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds to wait for every delivery"
    )
    parser.add_argument(
        "--quick", action="store_true", help="100 promotions, docs left alone (smoke test)"
    )
    args = parser.parse_args()
    if args.quick:
        args.promotions = 100
    run(args)


if __name__ == "__main__":
    main()
