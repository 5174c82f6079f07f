"""Token benchmark: ``python -m bench.tokens [--quick] [--redis-url URL]``.

Measures, on the memory backend (and on Redis with ``--redis-url``; the bench only adds
keys under a fresh org ``bench-<random>`` there and never flushes):

* token endpoint requests/s, one client at a time, two ways: through Flask's test
  client (the app's own cost: routing, Authlib, secret check, RS256 signing) and over
  HTTP on loopback (werkzeug's threaded server + an httpx client; adds HTTP parsing
  and the socket round trip). Both for the realm endpoint (client_secret_post) and for
  /v1/auth/sdk-token. Keys are generated ones (salted SHA-256 check, see
  identity/secrets.py);
* ``Identity.verify`` microseconds, median over many distinct tokens, first seen
  (parse, issuer/kid lookup, RS256 signature check, claims) and remembered (the LRU
  hit), each call timed alone;
* the parts identity/tokens.py and identity/secrets.py weigh, each call timed alone:
  PyJWT's parse of one of our tokens (why identity.tokens parses tokens itself), the
  header decoding that the verifier remembers per header, and checking a generated
  secret (salted SHA-256) and a chosen one (scrypt).

Prints a table, with the two verification medians beside their goals, and writes the
"tokens" section of docs/benchmarks.md, where the goals are listed.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import secrets
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import jwt
from flask import Flask
from werkzeug.serving import make_server

import identity
from bench.report import table, write_section
from identity import Identity
from identity.rate_limits import TOKEN_LIMITS, RateLimits
from identity.roles import SERVICE_READ
from identity.secrets import check_secret, hash_secret
from identity.tokens import _header_kid
from storage import Storage
from storage.memory import MemoryStorage

ISSUER = "http://127.0.0.1"
FIRST_SEEN_TARGET_US = 150.0
REMEMBERED_TARGET_US = 5.0
SCRYPT_CHECKS = 20  # each takes tens of milliseconds


def requests_per_second(send: Callable[[], int], seconds: float) -> float:
    for _ in range(20):  # warm-up: first requests load keys and fill caches
        assert send() == 200
    count = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        assert send() == 200
        count += 1
    return count / elapsed


def endpoint_rates(app: Flask, org: str, client_id: str, secret: str, seconds: float) -> list[Any]:
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    sdk = {"account_id": org, "key_id": client_id, "key_secret": secret}
    realm = f"/realms/{org}/protocol/openid-connect/token"
    test_client = app.test_client()
    rows: list[Any] = []

    def row(label: str, send: Callable[[], int]) -> None:
        rows.append([label, f"{requests_per_second(send, seconds):.0f}"])

    row("realm token, Flask test client", lambda: test_client.post(realm, data=form).status_code)
    row(
        "sdk-token, Flask test client",
        lambda: test_client.post("/v1/auth/sdk-token", json=sdk).status_code,
    )
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log per request
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}") as http:
            row(
                "realm token, HTTP loopback (werkzeug + httpx)",
                lambda: http.post(realm, data=form).status_code,
            )
            row(
                "sdk-token, HTTP loopback (werkzeug + httpx)",
                lambda: http.post("/v1/auth/sdk-token", json=sdk).status_code,
            )
            row(
                "certs (no signing), HTTP loopback, for scale",
                lambda: http.get(f"/realms/{org}/protocol/openid-connect/certs").status_code,
            )
    finally:
        server.shutdown()
        thread.join()
    return rows


def verify_medians(
    ident: Identity, org: str, client_id: str, secret: str, n: int
) -> tuple[float, float]:
    headers = [
        f"Bearer {ident.issue_token(org, client_id, secret)['access_token']}" for _ in range(n)
    ]
    ident.verify(headers[0])  # loads keys and caches the org: steady state, not start-up
    clock = time.perf_counter_ns
    first: list[int] = []
    again: list[int] = []
    gc.collect()
    gc.disable()  # as timeit does: a collection would land on one unlucky sample
    try:
        for header in headers[1:]:
            start = clock()
            ident.verify(header)
            first.append(clock() - start)
        for header in headers[1:]:
            start = clock()
            ident.verify(header)
            again.append(clock() - start)
    finally:
        gc.enable()
    return statistics.median(first) / 1000, statistics.median(again) / 1000


def median_us(call: Callable[[], object], n: int) -> float:
    """Median microseconds of ``n`` calls, each timed alone, the collector off."""
    clock = time.perf_counter_ns
    samples: list[int] = []
    call()
    gc.collect()
    gc.disable()
    try:
        for _ in range(n):
            start = clock()
            call()
            samples.append(clock() - start)
    finally:
        gc.enable()
    return statistics.median(samples) / 1000


def part_rows(token: str, n: int) -> list[list[Any]]:
    """The parts' medians: PyJWT's parse of ``token``, decoding its header, and the two
    secret checks."""
    generated = secrets.token_urlsafe(32)
    generated_hash = hash_secret(generated, generated=True)
    chosen = "a secret a person chose"
    chosen_hash = hash_secret(chosen, generated=False)
    parse = median_us(lambda: jwt.get_unverified_header(token), n)
    header = median_us(lambda: _header_kid(token.split(".", 1)[0]), n)
    sha256 = median_us(lambda: check_secret(generated, generated_hash), n)
    scrypt = median_us(lambda: check_secret(chosen, chosen_hash), SCRYPT_CHECKS)
    return [
        ["PyJWT's parse of an access token (`jwt.get_unverified_header`)", f"{parse:.1f} us"],
        [
            "decoding and checking a token's header (skipped once its header is known)",
            f"{header:.1f} us",
        ],
        ["generated secret check (salted SHA-256)", f"{sha256:.1f} us"],
        ["chosen secret check (scrypt n=2**14, r=8, p=1)", f"{scrypt / 1000:.0f} ms"],
    ]


def run_backend(
    name: str, storage: Storage, seconds: float, tokens: int
) -> tuple[list[Any], tuple[float, float]]:
    app = Flask(f"bench-{name}")
    # Every request here comes from one address at hundreds per second: this measures
    # issuance, not the brute-force limit (identity/ratelimit.py), so that limit is off.
    per_ip_off = RateLimits(TOKEN_LIMITS.per_account, None)
    ident = identity.init_app(app, storage, issuer_url=ISSUER, rate_limits=per_ip_off)
    org = f"bench-{secrets.token_hex(4)}"
    key, secret = ident.create_key(org, SERVICE_READ, "bench.tokens")
    rows = [[name, *row] for row in endpoint_rates(app, org, key.client_id, secret, seconds)]
    return rows, verify_medians(ident, org, key.client_id, secret, tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run while developing")
    parser.add_argument("--redis-url", help="also run on this Redis (adds keys, never flushes)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    seconds, tokens = (0.5, 300) if args.quick else (3.0, 3000)

    backends: list[tuple[str, Storage]] = [("memory", MemoryStorage())]
    if args.redis_url:
        from storage.redis import RedisStorage

        backends.append(("redis", RedisStorage.from_url(args.redis_url)))
    rate_rows: list[Any] = []
    verify_rows: list[Any] = []
    for name, storage in backends:
        rows, (first, remembered) = run_backend(name, storage, seconds, tokens)
        rate_rows += rows
        verify_rows.append(
            [
                name,
                f"{first:.1f}",
                "yes" if first < FIRST_SEEN_TARGET_US else "NO",
                f"{remembered:.2f}",
                "yes" if remembered < REMEMBERED_TARGET_US else "NO",
            ]
        )
        storage.close()

    memory = MemoryStorage()
    bench_identity = Identity(memory, issuer_url=ISSUER)
    key, secret = bench_identity.create_key("bench-parts", SERVICE_READ, "bench.tokens")
    token = bench_identity.issue_token("bench-parts", key.client_id, secret)["access_token"]
    parts = table(["part", "median"], part_rows(token, tokens))

    rates = table(["storage", "endpoint, client", "requests/s (1 client)"], rate_rows)
    verify = table(
        [
            "storage",
            "first-seen verify, median us",
            "< 150 us",
            "remembered verify, median us",
            "< 5 us",
        ],
        verify_rows,
    )
    body = f"""
Load average when the run started: {load:.1f} (2 cores; other work shares them).

Token endpoint, one client sending requests back to back for {seconds:g} s per row
(keys with generated secrets; each request checks the secret and signs an RS256 JWT):

{rates}

`Identity.verify`, median over {tokens - 1} distinct tokens, each call timed alone
(first seen: parse, issuer and kid lookup, RS256 signature check, claims; remembered:
the same header again, answered from the bounded LRU without a signature check):

{verify}

Parts, median over {tokens} calls each (scrypt: {SCRYPT_CHECKS}), each call timed alone:

{parts}

Reading the figures: the Flask test client rows are the app's own cost per token, most
of it the RSA-2048 private-key operation. The HTTP rows are bounded by werkzeug's
development server (a new connection and thread per request), as the certs row, which
signs nothing, shows; gunicorn serves deployments. On Redis a token request adds one
HGETALL (the key); that Redis runs on the same 2 cores as everything else. Keys whose
secret a person chose (bootstrap files) are checked with scrypt instead of SHA-256 and
cost the scrypt check more per token request by design (identity/secrets.py). PyJWT's
parse alone would take a large share of the first-seen budget, which is why
identity/tokens.py parses tokens with one regex check of its own. The machine is
shared with other work, so run-to-run spread is large (token requests/s varied about 2x
between runs); the verification medians are the figures to compare with the targets.
"""
    print(rates)
    print()
    print(verify)
    print()
    print(parts)
    write_section(
        "tokens",
        "Tokens: issuance and verification",
        "python -m bench.tokens" + (" --quick" if args.quick else ""),
        body,
    )


if __name__ == "__main__":
    main()
