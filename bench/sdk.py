"""SDK benchmark: ``python -m bench.sdk [--quick]``.

Measures ``PromptClient.get_prompt_version`` (and the async twin where noted):

* cache hit: median per-call time over batches of calls, as ``timeit`` does, set
  against its goal (``TARGET_HIT_US``); and the same with ``watch=True`` (the client's
  events stream open in the background), the two taking turns batch by batch, set
  against the goal that watching costs a hit nothing (``TARGET_WATCH_RATIO``);
* cache hit with ``rollout_key`` while a rollout (started through the API) is under
  way: a key seen before, in batch pairs with plain hits, the median of the pairs'
  ratios set against ``TARGET_ROLLOUT_RATIO``; a new key on every call (its sha256);
  and a key on a prompt without a rollout;
* cache hit of a version that declares a ``variables_schema`` and examples, in the same
  batch pairs with plain hits, set against ``TARGET_SCHEMA_RATIO``: a contract must not
  cost a hit anything; and of a version with conditional sections, set against
  ``TARGET_SECTIONS_HIT_RATIO``;
* usage counting on against ``report_usage=False``: a cache hit, and a hit followed by
  ``render()``, in batch pairs, set against ``TARGET_USAGE_RATIO``;
* ``render()`` of a version with conditional sections in batch pairs with ``render()``
  of one without (the same placeholders), set against ``TARGET_SECTIONS_RENDER_RATIO``;
* cold fetch: ``clear_cache()`` then a call, so each one is a full GET (token already
  held) against the real app (create_app with memory storage) served by werkzeug on
  127.0.0.1 in this process; a raw httpx GET with the same headers is the baseline.
  werkzeug's server closes the connection after every response, so each request
  includes a TCP connect;
* revalidation: a client with a 1 microsecond TTL, so each call finds its entry
  expired and sends a conditional GET, answered 304 (the token stays valid: it runs
  on the real clock);
* a new client: its construction (mostly httpx loading CA certificates for its SSL
  context), then its first call (token exchange plus fetch).

The server shares this process (and its GIL) with the client, so network figures
include the server's own work. Prints a table and writes the "sdk" section of
docs/benchmarks.md (not with --quick).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from flask import Flask
from werkzeug.serving import make_server

from bench.report import table, write_section
from bench.sdk_pairs import paired_hits, paired_renders, paired_usage, per_call_us, summary
from promptsvc.app import create_app
from promptsvc.client import AsyncPromptClient, PromptClient
from promptsvc.client.flow import request_headers
from promptsvc.config import Settings
from storage.memory import MemoryStorage

ORG = "bench"
USER = str(uuid.uuid4())
CONTENT = "You are {{ persona }}. Answer {{ question }} in {{ language }}."
VARIABLES = ["persona", "question", "language"]
TARGET_HIT_US = 1.5
TARGET_WATCH_RATIO = 1.05  # watch=True hit median / plain hit median
TARGET_ROLLOUT_RATIO = 1.1  # rollout_key hit (a key seen before) median / plain hit median
TARGET_SCHEMA_RATIO = 1.05  # hit of a version with a variables_schema / plain hit
TARGET_SECTIONS_HIT_RATIO = 1.05  # hit of a version with sections / plain hit
TARGET_SECTIONS_RENDER_RATIO = 1.5  # render() of a version with sections / without
TARGET_USAGE_RATIO = 1.05  # with usage counting on / report_usage=False (hit; hit + render)
SECTIONS = (
    "{{#formal}}You are {{ persona }}.{{/formal}}{{^formal}}Be {{ persona }}.{{/formal}} "
    "Answer {{ question }} in {{ language }}."
)
ROLLOUT_PERCENT = 40
SCHEMA = {
    "persona": {"type": "string", "description": "who answers"},
    "question": {"type": "string"},
    "language": {"type": "string", "enum": ["English", "French"], "default": "English"},
}
EXAMPLES = [{"name": "faq", "variables": {"persona": "a guide", "question": "why?"}}]


@contextmanager
def local_server() -> Iterator[tuple[str, str, str]]:
    """The real app on a loopback port; yields (url, key_id, key_secret)."""
    storage = MemoryStorage()
    storage.create_prompt(ORG, "greeting")
    version = storage.create_version(
        ORG, "greeting", CONTENT, USER, {"team": "bench"}, ["b"], variables=VARIABLES
    )
    storage.promote(ORG, "greeting", version.version_id, USER)
    storage.create_prompt(ORG, "contract")
    declared = storage.create_version(
        ORG,
        "contract",
        CONTENT,
        USER,
        {"team": "bench"},
        ["b"],
        variables=VARIABLES,
        variables_schema=SCHEMA,
        examples=EXAMPLES,
    )
    storage.promote(ORG, "contract", declared.version_id, USER)
    storage.create_prompt(ORG, "sections")
    variables = [*VARIABLES[:1], "formal", *VARIABLES[1:]]
    sectioned = storage.create_version(
        ORG, "sections", SECTIONS, USER, variables=variables, sections=["formal"]
    )
    storage.promote(ORG, "sections", sectioned.version_id, USER)
    storage.create_prompt(ORG, "banner")
    for text in ("Old {{ persona }}", "New {{ persona }}"):
        banner = storage.create_version(ORG, "banner", text, USER, variables=["persona"])
        if text.startswith("Old"):
            storage.promote(ORG, "banner", banner.version_id, USER)
    app = create_app(Settings(), storage=storage)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    start_rollout(app, banner.version_id)
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


def start_rollout(app: Flask, candidate: str) -> None:
    """Start a rollout of ``candidate`` (banner v2) as a client would: through the API."""
    key, secret = app.extensions["identity"].create_key(ORG, "Service Write")
    http = app.test_client()
    body = {"account_id": ORG, "key_id": key.client_id, "key_secret": secret}
    token = http.post("/v1/auth/sdk-token", json=body).get_json()["access_token"]
    started = http.post(
        f"/api/v1/prompts/banner/versions/{candidate}/promote",
        json={"rollout_percent": ROLLOUT_PERCENT},
        headers={"Authorization": f"Bearer {token}"},
    )
    if started.status_code != 201:
        raise RuntimeError(f"the rollout did not start: {started.status_code} {started.text}")


def samples_us(call: Callable[[], object], n: int) -> list[float]:
    """Each of ``n`` calls timed on its own, in microseconds."""
    out = []
    gc.disable()
    try:
        for _ in range(n):
            start = time.perf_counter_ns()
            call()
            out.append((time.perf_counter_ns() - start) / 1000)
    finally:
        gc.enable()
    return out


def async_hits_us(
    plain: AsyncPromptClient, watching: AsyncPromptClient, number: int, repeat: int
) -> tuple[list[float], list[float]]:
    """Per-call hit times of the two clients in batches taking turns, on one loop, the
    second one's events stream open meanwhile. Closes both clients."""

    async def batch(client: AsyncPromptClient) -> float:
        start = time.perf_counter()
        for _ in range(number):
            await client.get_prompt_version("greeting")
        return (time.perf_counter() - start) / number * 1e6

    async def run() -> tuple[list[float], list[float]]:
        async with plain, watching:
            for client in (plain, watching):
                await client.get_prompt_version("greeting")
            deadline = time.monotonic() + 10
            while not watching.watching:
                if time.monotonic() > deadline:
                    raise RuntimeError("the events stream did not open")
                await asyncio.sleep(0.01)
            times: tuple[list[float], list[float]] = ([], [])
            for _ in range(repeat):
                times[0].append(await batch(plain))
                times[1].append(await batch(watching))
            return times

    gc.disable()
    try:
        return asyncio.run(run())
    finally:
        gc.enable()


def wait_watching(client: PromptClient) -> None:
    deadline = time.monotonic() + 10
    while not client.watching:
        if time.monotonic() > deadline:
            raise RuntimeError("the events stream did not open")
        time.sleep(0.01)


def measure(args: argparse.Namespace) -> tuple[list[list[object]], float, dict[str, float]]:
    rows: list[list[object]] = []
    with local_server() as (url, key_id, secret):
        options: dict[str, Any] = {"account_id": ORG, "key_id": key_id, "key_secret": secret}
        with (
            PromptClient(url, **options) as client,  # the real clock: time.monotonic
            PromptClient(url, watch=True, **options) as watching,
            PromptClient(url, report_usage=False, **options) as quiet,
        ):
            wait_watching(watching)
            for each in (client, watching):
                each.get_prompt_version("greeting")
                each.get_prompt_version("greeting", label="latest")
            # Batches of the two take turns, so load from elsewhere falls on both alike.
            hits: list[float] = []
            watched: list[float] = []
            for _ in range(args.hit_repeat):
                hits += per_call_us('get("greeting")', {"get": client.get_prompt_version}, 2_000, 1)
                watched += per_call_us(
                    'get("greeting")', {"get": watching.get_prompt_version}, 2_000, 1
                )
            rows.append(summary("cache hit (batches of 2,000)", hits))
            rows.append(summary("cache hit, watch=True (batches of 2,000)", watched))
            namespace: dict[str, object] = {"get": client.get_prompt_version}
            latest = per_call_us('get("greeting", label="latest")', namespace, 2_000, 50)
            rows.append(summary('cache hit, label="latest"', latest))
            rollout_rows, paired_ratios = paired_hits(client, args.hit_repeat)
            rows += rollout_rows
            render_rows, render_ratios = paired_renders(client, args.hit_repeat)
            rows += render_rows
            paired_ratios |= render_ratios
            usage_rows, usage_ratios = paired_usage(client, quiet, args.hit_repeat)
            rows += usage_rows
            paired_ratios |= usage_ratios

        with (
            PromptClient(url, **options) as client,
            PromptClient(url, cache_ttl=1e-6, **options) as revalidating,
            httpx.Client() as raw,
        ):
            token = raw.post(f"{url}/v1/auth/sdk-token", json=options).json()["access_token"]
            path = f"{url}/api/v1/prompts/greeting/production"
            etag = raw.get(path, headers=request_headers(token)).headers["ETag"]
            revalidating.get_prompt_version("greeting")

            def cold() -> object:
                client.clear_cache()
                return client.get_prompt_version("greeting")

            cases: dict[str, Callable[[], object]] = {
                "cold fetch (200)": cold,
                "revalidation (304)": lambda: revalidating.get_prompt_version("greeting"),
                "baseline: raw httpx GET (200)": lambda: raw.get(
                    path, headers=request_headers(token)
                ),
                "baseline: raw httpx GET with If-None-Match (304)": lambda: raw.get(
                    path, headers={**request_headers(token), "If-None-Match": etag}
                ),
            }
            # The cases take turns in batches of 10, so noise from other processes on the
            # machine falls on all of them alike.
            samples: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(args.requests // 10):
                for name, call in cases.items():
                    samples[name] += samples_us(call, 10)
            rows += [summary(name, values) for name, values in samples.items()]

        built: list[PromptClient] = []
        construct = samples_us(lambda: built.append(PromptClient(url, **options)), args.new_clients)
        rows.append(summary("new client: construction", construct))
        first = iter(built)
        first_call = samples_us(lambda: next(first).get_prompt_version("greeting"), len(built))
        rows.append(summary("new client: first call (token + fetch)", first_call))
        for made in built:
            made.close()

        async_hits, async_watched = async_hits_us(
            AsyncPromptClient(url, **options),
            AsyncPromptClient(url, watch=True, **options),
            2_000,
            args.hit_repeat,
        )
        rows.append(summary("async cache hit (batches of 2,000)", async_hits))
        rows.append(summary("async cache hit, watch=True (batches of 2,000)", async_watched))
    ratios = {
        "sync": statistics.median(watched) / statistics.median(hits),
        "async": statistics.median(async_watched) / statistics.median(async_hits),
        **paired_ratios,
    }
    return rows, statistics.median(hits), ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, no docs update")
    args = parser.parse_args()
    args.hit_repeat, args.requests, args.new_clients = (
        (20, 100, 5) if args.quick else (200, 1000, 30)
    )

    load = os.getloadavg()[0]
    rows, hit_median, ratios = measure(args)
    verdict = "met" if hit_median < TARGET_HIT_US else "NOT met"
    watch_verdict = (
        "met" if max(ratios["sync"], ratios["async"]) <= TARGET_WATCH_RATIO else "NOT met"
    )
    rollout_verdict = "met" if ratios["rollout"] <= TARGET_ROLLOUT_RATIO else "NOT met"
    schema_verdict = "met" if ratios["schema"] <= TARGET_SCHEMA_RATIO else "NOT met"
    sections_hit = "met" if ratios["sections_hit"] <= TARGET_SECTIONS_HIT_RATIO else "NOT met"
    sections_render = (
        "met" if ratios["sections_render"] <= TARGET_SECTIONS_RENDER_RATIO else "NOT met"
    )
    usage_verdict = (
        "met"
        if max(ratios["usage_hit"], ratios["usage_render"]) <= TARGET_USAGE_RATIO
        else "NOT met"
    )
    body = "\n\n".join(
        [
            f"Load average when the run started: {load:.1f} ({os.cpu_count()} cores; other "
            "work shares them, so medians and p95 move between runs).",
            table(["case", "samples", "median", "min", "p95"], rows),
            f"Target: cache hit under {TARGET_HIT_US} us median: **{verdict}** "
            f"({hit_median:.3f} us). Target: a hit with watch=True costs what one without "
            f"does (median ratio at most {TARGET_WATCH_RATIO}): **{watch_verdict}** "
            f"({ratios['sync']:.3f} sync, {ratios['async']:.3f} async). Target: a hit with "
            f"rollout_key during a rollout (a key seen before) costs at most "
            f"{TARGET_ROLLOUT_RATIO}x a plain hit (median of the ratios of batch pairs): "
            f"**{rollout_verdict}** ({ratios['rollout']:.3f}). Target: a hit of a version "
            f"with a variables_schema costs at most {TARGET_SCHEMA_RATIO}x a plain hit "
            f"(median of the ratios of batch pairs): **{schema_verdict}** "
            f"({ratios['schema']:.3f}). Target: a hit of a version with conditional sections "
            f"costs at most {TARGET_SECTIONS_HIT_RATIO}x a plain hit: **{sections_hit}** "
            f"({ratios['sections_hit']:.3f}). Target: render() of a version with sections "
            f"costs at most {TARGET_SECTIONS_RENDER_RATIO}x render() of one without (the same "
            f"placeholders; median of the ratios of batch pairs): **{sections_render}** "
            f"({ratios['sections_render']:.3f}). Target: usage counting on costs a cache hit, "
            f"and a hit followed by render() (which counts), at most {TARGET_USAGE_RATIO}x "
            f"what they cost with report_usage=False (median of the ratios of batch pairs): "
            f"**{usage_verdict}** ({ratios['usage_hit']:.3f} hit, "
            f"{ratios['usage_render']:.3f} hit + render).",
            "A hit is a dict lookup and one clock read: no lock, uuid, logging or datetime. "
            "watch=True adds nothing to it: the events stream is read by a thread (a task "
            "for the async client) that sleeps in a socket read between events, and an "
            "event only drops entries. "
            "During a rollout the cached entry holds baseline and candidate; a rollout_key "
            "hit looks the key up in the rollout's memo of keys seen (up to 10,000), so only "
            "a key's first call in a rollout computes its sha256 bucket. The rollout_key rows "
            "and the row before them run in pairs of batches, each pair's order alternating; "
            "the ratio is the median of the pairs' ratios, so load that changes between "
            "pairs cancels out. "
            "Network rows run against the real app (memory storage) on 127.0.0.1 in the same "
            "process, so they include the server's work and share one GIL with it; compare "
            "them with the raw-httpx baselines, not with a remote service. werkzeug's "
            "development server closes every connection, so each network row includes a "
            "TCP connect. Hit rows are per-call times of whole batches (timeit style), "
            "batches with and without watch=True taking turns one by one; the others time "
            "each call, the four request cases taking turns in batches of 10. "
            "render() analyses a content once (its sections, variables and implied "
            "contract are cached by content); a call checks the values and fills the kept "
            "text in one regex pass. "
            "Usage counting adds nothing to a hit (it counts renders, not reads); a render "
            "of a version a client fetched adds one increment of a defaultdict entry under "
            "a key made when the version was fetched: no lock, no allocation. The sends "
            "run in a background thread every usage_interval seconds (30).",
        ]
    )
    print(body)
    if not args.quick:
        command = " ".join(["python -m bench.sdk", *sys.argv[1:]])
        write_section("sdk", "SDK (promptsvc.client)", command, body)


if __name__ == "__main__":
    main()
