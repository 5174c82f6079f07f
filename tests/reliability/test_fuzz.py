"""schemathesis against /openapi.json of a live server on memory:// and real Redis:
every operation, positive and negative data, zero 5xx, every answer conforming to its
documented schema and status codes, every error in the API's error shape.

The suite runs a few examples per batch (PROMPTSVC_FUZZ_EXAMPLES, default 5) with a
fixed seed; ``python -m bench.reliability`` runs many more with a fresh seed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest

from identity.roles import SERVICE_ADMIN, SERVICE_WRITE
from tests.reliability.rel_fuzz import Tokens, fuzz
from tests.reliability.rel_support import Report, make_app, new_key, token_for
from tests.servers import LiveServer

# The token limits promptsvc.config reads (off here: the fuzzer sends many requests).
PER_CLIENT_ENV = "PROMPTSVC_TOKEN_RATE_LIMIT"
PER_IP_ENV = "PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP"

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("PROMPTSVC_FUZZ_EXAMPLES", "5"))
SEED = 20261125
# The fuzzing stops here and reports what it left undone (a failure): a deadline for a
# hung run, not a speed. Generous, since the machine may be loaded by other work; an
# idle one finishes far sooner.
BUDGET_SECONDS = 900.0
ORG = "fuzz"


@pytest.fixture
def fuzz_server(backend_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    # Thousands of token requests from one address would all be 429 after the first
    # minute's worth; the limits have their own tests (test_rate_limits.py).
    monkeypatch.setenv(PER_CLIENT_ENV, "off")
    monkeypatch.setenv(PER_IP_ENV, "off")
    server = LiveServer(make_app(backend_url)).start()
    try:
        yield server
    finally:
        server.stop()


def documented_operations(base_url: str) -> set[str]:
    paths = httpx.get(f"{base_url}/openapi.json", timeout=10).json()["paths"]
    methods = {"get", "post", "put", "patch", "delete"}
    return {f"{m.upper()} {p}" for p, ops in paths.items() for m in ops if m in methods}


def test_fuzz_every_operation(fuzz_server: LiveServer, backend_url: str, report: Report) -> None:
    app = fuzz_server.app
    tokens = Tokens(
        ORG,
        write=token_for(app, new_key(app, ORG, SERVICE_WRITE)),
        admin=token_for(app, new_key(app, ORG, SERVICE_ADMIN)),
    )
    result = fuzz(
        fuzz_server.base_url,
        tokens,
        backend=backend_url.split("://")[0],
        examples=EXAMPLES,
        seed=SEED,
        budget_seconds=BUDGET_SECONDS,
    )
    report(
        input=f"schemathesis {result.backend}: every operation of /openapi.json, positive and "
        f"negative data, any and existing resources, {EXAMPLES} examples per batch",
        result=result.summary(),
    )
    assert set(result.operations) == documented_operations(fuzz_server.base_url)
    assert not result.unfinished, f"budget ran out before: {result.unfinished}"
    assert result.statuses.get(500, 0) == 0
    assert not result.failures, result.describe_failures()
