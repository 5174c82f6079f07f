"""API fuzzing with schemathesis against a live server's /openapi.json.

:func:`fuzz` loads the schema from the running server and, for every operation in it,
runs Hypothesis batches of generated requests:

* modes: positive (data that fits the schema) and negative (data that does not);
* targets: "any" (every value generated, so names and ids mostly do not exist) and
  "known" (path parameters pinned to a prompt, versions, an org and a key that do exist,
  re-created when a fuzzed DELETE removed them), so the write paths really run;
* tokens: a Service Write token on every operation; the key endpoints also
  with a Service Admin token, else they could only ever answer 403.

Each response goes through schemathesis' ``not_a_server_error``,
``status_code_conformance``, ``content_type_conformance`` and
``response_schema_conformance`` checks, plus two of ours: the error shape (docs/api.md section
9) on every 4xx/5xx and a safe ``X-Request-ID`` on every response. Failures are collected (no
shrinking: the point is a report), each with a curl line that reproduces it.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.reliability.rel_contract import error_problems, request_id_problems

KNOWN_PROMPT = "fuzz-known"
REQUEST_TIMEOUT = 60.0  # an answer, however loaded the machine; not a speed
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


def contract_error_shape(ctx: Any, response: Any, case: Any) -> None:
    """Every 4xx/5xx body is {code, message, error} with error == code."""
    content_type = (response.headers.get("content-type") or [""])[0]
    path = urlsplit(response.request.url).path
    problems = error_problems(response.status_code, path, content_type, response.content)
    if problems:
        raise AssertionError("error shape: " + "; ".join(problems))


def request_id_header(ctx: Any, response: Any, case: Any) -> None:
    """Every response carries a safe X-Request-ID."""
    sent = response.request.headers.get("X-Request-ID")
    echoed = (response.headers.get("x-request-id") or [None])[0]
    problems = request_id_problems(sent, echoed)
    if problems:
        raise AssertionError("X-Request-ID: " + "; ".join(problems))


CHECKS: list[Callable[..., Any]] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    contract_error_shape,
    request_id_header,
]


@dataclass
class Tokens:
    org: str
    write: str
    admin: str


@dataclass
class Known:
    """Resources that exist, for the "known" target's path parameters."""

    names: list[str]
    version_ids: list[str]
    client_ids: list[str]
    orgs: list[str]

    def choices(self, parameter: str) -> list[str] | None:
        return {
            "name": self.names,
            "versionId": self.version_ids,
            "client_id": self.client_ids,
            "org": self.orgs,
        }.get(parameter)


@dataclass
class Failure:
    operation: str
    mode: str
    target: str
    status: int | None
    message: str
    curl: str

    def describe(self) -> str:
        return (
            f"{self.operation} [{self.mode}/{self.target}] -> {self.status}: {self.message}\n"
            f"    reproduce: {self.curl}"
        )


@dataclass
class FuzzReport:
    backend: str
    seed: int
    examples: int
    operations: list[str] = field(default_factory=list)
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    slowest: float = 0.0
    unfinished: list[str] = field(default_factory=list)
    # The last requests sent, for the context of a failure that shows up later.
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=12))

    def distinct_failures(self) -> list[Failure]:
        seen: dict[tuple[str, str], Failure] = {}
        for failure in self.failures:
            seen.setdefault((failure.operation, failure.message[:120]), failure)
        return list(seen.values())

    def summary(self) -> str:
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(self.statuses.items()))
        return (
            f"{self.backend}: {len(self.operations)} operations, {self.requests} requests in "
            f"{self.seconds:.1f} s (seed {self.seed}, {self.examples} examples per batch, "
            f"slowest answer {self.slowest:.2f} s); "
            f"statuses {statuses}; {len(self.distinct_failures())} distinct failures"
        )

    def describe_failures(self) -> str:
        return "\n".join(f.describe() for f in self.distinct_failures())


def seed_known(http: httpx.Client, tokens: Tokens) -> Known:
    """(Re-)create the known prompt: v1 published, v2 draft, v3 archived, v4 draft; and a
    key to be revoked by fuzzed DELETE /keys/{client_id}."""
    write = {"Authorization": f"Bearer {tokens.write}"}
    admin = {"Authorization": f"Bearer {tokens.admin}"}

    def ok(response: httpx.Response) -> Any:
        if response.status_code >= 300:
            raise RuntimeError(f"seeding failed: {response.request.url} {response.text}")
        return response.json() if response.content else None

    http.delete(f"/api/v1/prompts/{KNOWN_PROMPT}", headers=write)
    prompt = ok(http.post("/api/v1/prompts", json={"name": KNOWN_PROMPT}, headers=write))
    base = f"/api/v1/prompts/{KNOWN_PROMPT}/versions"
    ids = [
        ok(http.post(base, json={"content": f"v{n} {{{{ name }}}}"}, headers=write))["version_id"]
        for n in range(1, 5)
    ]
    ok(http.post(f"{base}/{ids[0]}/promote", headers=write))
    ok(http.post(f"{base}/{ids[2]}/archive", headers=write))
    victim = ok(http.post("/api/v1/keys", json={"role": "Service Read"}, headers=admin))
    return Known(
        names=[KNOWN_PROMPT, prompt["prompt_id"]],
        version_ids=[*ids, "1", "2", "3", "4"],
        client_ids=[victim["client_id"]],
        orgs=[tokens.org],
    )


def _pinned(operation: Any, known: Known) -> Iterator[dict[str, str]]:
    names = [p.name for p in operation.path_parameters]
    options = [known.choices(name) or [] for name in names]
    if not names or not all(options):
        return
    for combo in itertools.product(*options):
        yield dict(zip(names, combo, strict=True))


def fuzz(
    base_url: str,
    tokens: Tokens,
    *,
    backend: str,
    examples: int,
    seed: int,
    budget_seconds: float,
) -> FuzzReport:
    """Fuzz every operation of ``base_url``'s OpenAPI document; see the module docstring."""
    report = FuzzReport(backend=backend, seed=seed, examples=examples)
    started = time.monotonic()
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", timeout=REQUEST_TIMEOUT)
    session = requests.Session()
    http = httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT)
    known = seed_known(http, tokens)
    try:
        for result in schema.get_all_operations():
            operation = result.ok()
            report.operations.append(operation.label)
            roles = [("write", tokens.write)]
            if operation.path.startswith("/api/v1/keys"):
                roles.append(("admin", tokens.admin))
            for (role, token), mode, target in itertools.product(roles, MODES, ("any", "known")):
                if time.monotonic() - started > budget_seconds:
                    report.unfinished.append(f"{operation.label} {role}/{mode}/{target}")
                    continue
                pins: list[dict[str, str]] = [{}]
                if target == "known":
                    if not list(_pinned(operation, known)):
                        continue  # no path parameters: "known" is the same as "any"
                    known = seed_known(http, tokens)
                    pins = list(_pinned(operation, known))
                strategy = st.one_of(
                    [operation.as_strategy(generation_mode=mode, path_parameters=p) for p in pins]
                )
                auth = {"Authorization": f"Bearer {token}"}
                batch = _Batch(report, session, base_url, auth, f"{mode.value}", target, role)
                batch.run(strategy, examples, seed, lambda: seed_known(http, tokens))
    finally:
        session.close()
        http.close()
        report.seconds = time.monotonic() - started
    return report


# A long poll of /api/v1/events waits up to ``wait`` (0-30) seconds for an event that a
# fuzzer never makes: fuzz it, but let it wait one second at most.
LONGEST_WAIT = 1


def _short_wait(case: Any) -> None:
    wait = (case.query or {}).get("wait")
    if case.operation.path == "/api/v1/events" and str(wait).isdigit():
        case.query["wait"] = min(int(str(wait)), LONGEST_WAIT)


@dataclass
class _Batch:
    report: FuzzReport
    session: requests.Session
    base_url: str
    auth: dict[str, str]
    mode: str
    target: str
    role: str

    def run(self, strategy: Any, examples: int, seed: int, reseed: Callable[[], Known]) -> None:
        needs_reseed = False

        @hypothesis_seed(seed)
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy)
        def one(case: Any) -> None:
            nonlocal needs_reseed
            if needs_reseed:
                needs_reseed = False
                try:
                    reseed()
                except RuntimeError as exc:  # the API refused a plain, valid request
                    context = " | ".join(self.report.recent)
                    self._fail("re-seeding", None, f"{exc} after: {context}", "")
                    return
            self.check(case)
            if case.method.upper() == "DELETE" and self.target == "known":
                needs_reseed = True

        # Unsatisfiable: nothing to break in this mode (negative data for a GET without
        # parameters).
        with contextlib.suppress(Unsatisfiable):
            one()

    def check(self, case: Any) -> None:
        label = case.operation.label
        curl = case.as_curl_command(headers=self.auth, base_url=self.base_url).replace(
            self.auth["Authorization"], "Bearer $TOKEN"
        )
        _short_wait(case)
        started = time.monotonic()
        try:
            response = case.call(
                base_url=self.base_url,
                session=self.session,
                headers=self.auth,
                timeout=REQUEST_TIMEOUT,
            )
        except requests.RequestException as exc:
            self._fail(label, None, f"no answer: {exc!r}", curl)
            return
        elapsed = time.monotonic() - started
        self.report.slowest = max(self.report.slowest, elapsed)
        self.report.recent.append(
            f"{case.method} {urlsplit(response.request.url).path[:80]} -> "
            f"{response.status_code} in {elapsed:.2f}s"
        )
        self.report.requests += 1
        self.report.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=self.auth)
        except FailureGroup as group:
            for failure in group.exceptions:
                message = f"{failure.title}: {failure.message}".replace("\n", " ")
                self._fail(label, response.status_code, message[:600], curl)

    def _fail(self, label: str, status: int | None, message: str, curl: str) -> None:
        self.report.failures.append(
            Failure(label, f"{self.role}/{self.mode}", self.target, status, message, curl[:2000])
        )
