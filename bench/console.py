"""Console benchmark: ``python -m bench.console [--redis-url URL] [--quick]``.

Measures how long the server takes to render console pages for a signed-in person, on
the memory backend and on the real Redis at ``--redis-url`` (default db 9, which this
bench FLUSHes before and after: give it a db nobody else uses). The prompt measured has
1,000 versions and 500 promotion records; its org has 20 users and 10 API keys (whose
names the pages show).

Each page is requested through Flask's test client, in-process, so the time is the
server's alone: session check and access-token verification, storage reads, rendering.
No network, no browser. Target: the prompt page under 150 ms (median and 95th
percentile).

Prints a table and writes the "console" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from flask.testing import FlaskClient

from bench.report import table, write_section
from identity.rate_limits import LOGIN_LIMITS, RateLimits
from promptsvc.app import create_app
from promptsvc.config import Settings
from storage import Storage
from storage.memory import MemoryStorage
from storage.redis import RedisStorage
from tests.console.console_support import PASSWORD, sign_in

ORG = "acme"
PROMPT = "big"
VERSIONS = 1000
DRAFT = VERSIONS - 1  # even numbers were promoted in turn, odd ones stay drafts
TARGET_MS = 150.0
# Every sign-in here comes from one address: this measures pages, not the sign-in
# limit per address, so that limit is off.
SETTINGS = Settings(
    issuer_url="http://localhost", login_rate_limits=RateLimits(LOGIN_LIMITS.per_account, None)
)
PAGES = (
    ("prompt page (1,000 versions, 500 promotions)", f"/console/prompts/{PROMPT}"),
    ("prompt page, 10th page of versions", None),  # filled in once the cursor is known
    ("version page (a draft)", f"/console/prompts/{PROMPT}/versions/{DRAFT}"),
    ("diff of two versions", f"/console/prompts/{PROMPT}/diff?from=1&to={DRAFT}"),
    (
        "promote confirmation (diff with production)",
        f"/console/prompts/{PROMPT}/versions/{DRAFT}/promote",
    ),
    ("prompt list", "/console/prompts"),
)


def fill(storage: Storage) -> None:
    """The org, its people and keys, and the big prompt."""
    app = create_app(SETTINGS, storage=storage)
    identity = app.extensions["identity"]
    identity.create_user(ORG, "ada", "Service Admin", PASSWORD)
    for i in range(19):
        identity.create_user(ORG, f"person{i}", "Service Write", PASSWORD)
    for _ in range(10):
        identity.create_key(ORG, "Service Read", "bench")
    author = identity.list_users(ORG)[1].user_id
    storage.create_prompt(ORG, PROMPT, "text", "A prompt with a long past")
    body = "\n".join(
        f"Line {n}: answer {{{{question}}}} for {{{{customer.name}}}}." for n in range(30)
    )
    for number in range(1, VERSIONS + 1):
        version = storage.create_version(
            ORG,
            PROMPT,
            body.replace("Line 7", f"Line 7 (v{number})"),
            author,
            metadata={"model": "gpt-4o-mini", "temperature": 0.2, "n": number},
            tags=["bench", f"batch-{number // 100}"],
            variables=["question", "customer.name"],
        )
        if number % 2 == 0:
            storage.promote(ORG, PROMPT, version.version_id, author, notes=f"release {number}")
    for i in range(30):
        storage.create_prompt(ORG, f"other-{i:02d}")


def signed_in(storage: Storage) -> FlaskClient:
    app = create_app(SETTINGS, storage=storage)
    client = app.test_client()
    sign_in(client, "ada")
    return client


def tenth_page(client: FlaskClient) -> str:
    path = f"/console/prompts/{PROMPT}"
    for _ in range(9):
        text = client.get(path).text
        cursor = text.split("versions=", 1)[1].split('"', 1)[0].split("&", 1)[0]
        path = f"/console/prompts/{PROMPT}?versions={cursor}"
    return path


def measure(client: FlaskClient, path: str, n: int) -> list[float]:
    assert client.get(path).status_code == 200, path  # warm-up, and a check
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        answer = client.get(path)
        samples.append((time.perf_counter() - start) * 1000)
        assert answer.status_code == 200, path
    return samples


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


@contextmanager
def backends(redis_url: str) -> Iterator[list[tuple[str, Storage]]]:
    redis_storage = RedisStorage.from_url(redis_url)
    redis_storage.client.flushdb()
    try:
        yield [("memory", MemoryStorage()), ("redis", redis_storage)]
    finally:
        redis_storage.client.flushdb()
        redis_storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--quick", action="store_true", help="short run while developing")
    args = parser.parse_args()
    n = 20 if args.quick else 100
    load = os.getloadavg()[0]
    rows = []
    verdicts = []
    with backends(args.redis_url) as stores:
        for backend, storage in stores:
            started = time.perf_counter()
            fill(storage)
            print(f"[console] {backend}: filled in {time.perf_counter() - started:.1f} s")
            client = signed_in(storage)
            for label, path in PAGES:
                samples = measure(client, path or tenth_page(client), n)
                median, p95 = statistics.median(samples), percentile(samples, 0.95)
                rows.append([backend, label, f"{median:.1f}", f"{p95:.1f}", f"{max(samples):.1f}"])
                print(f"[console] {backend} {label}: median {median:.1f} ms, p95 {p95:.1f} ms")
                if path == f"/console/prompts/{PROMPT}":
                    met = "met" if p95 < TARGET_MS else "MISSED"
                    verdicts.append(f"{backend}: p95 {p95:.1f} ms, target {met}")
    figures = table(["storage", "page", "median ms", "p95 ms", "slowest ms"], rows)
    print(figures)
    body = f"""
Load average when the run started: {load:.1f} (2 cores; other work shares them).

Server time to answer one console page for a signed-in Service Admin, {n} requests per
page after a warm-up, through Flask's test client (in-process: the session check,
access-token verification, storage reads and rendering; no network, no browser). The
prompt has {VERSIONS:,} versions of 30 lines and 500 promotion records; the org has 20
users and 10 API keys; Redis is a local server.

{figures}

Target: the prompt page of a prompt with 1,000 versions under {TARGET_MS:.0f} ms at the
95th percentile. This run: {"; ".join(verdicts)}.

Reading the figures: the prompt page reads one page of versions (25) and one of
promotion records (10), newest first, and the org's users and keys for the names; the
number of versions a prompt has does not change its cost. The version, diff and
promote pages read the versions they show and render their content (the diff of two
30-line versions side by side).
"""
    write_section("console", "Console: server render time", "python -m bench.console", body)


if __name__ == "__main__":
    main()
